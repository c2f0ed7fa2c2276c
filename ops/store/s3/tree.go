package s3

// Folder uploads (store.Trees) on S3. The layout, beside that of a file upload (s3.go):
//
//	P/<id>/<name>/<rel>          each file of the folder: one object (PutObject with Content-MD5,
//	                             so the server checks it got the bytes hashed), metadata
//	                             x-amz-meta-blake3 its BLAKE3
//	P/<id>/.upload.json          id, name, size (all bytes), blake3 (the listing's), made, kind
//	                             "folder", files, sizes (in listing order), as the local store's
//	P/<id>/.tree.b3              the listing: one b3sum line per file, paths from <name>, its
//	                             BLAKE3 the folder's; metadata blake3, name, size, files. Written
//	                             create-only (If-None-Match: *) LAST, after every file and the
//	                             metadata: it is what makes the folder upload finished. A P/<id>/
//	                             without it is an unfinished upload, never shown as finished.
//	P/<id>/.used                 the marker, as for a file
//	P/.attachctl/partial/<id>/info   while unfinished: {name, size, made, kind "folder", blake3}
//	P/.attachctl/source/<key>    the source note (key over the folder's path, name, size and
//	                             BLAKE3): {id}, so a run after a kill resumes the same upload, and
//	                             two runs share an upload only when they send the same bytes. Its
//	                             key's hex is in the info ("note") and the listing's metadata
//	                             (note), so that the sweep or abort that removes the upload removes
//	                             the note too when it still names that upload (If-Match its ETag).
//
// A resume lists P/<id>/<name>/ once and keeps every object whose size and ETag (the MD5 of its
// bytes, for a single PUT) are the source file's; the rest are sent again, and objects the source
// no longer has are removed before the listing is written. A one-file upload's P/<id>/ never
// holds .upload.json, which tells a folder upload from a file upload named .tree.b3.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/zeebo/blake3"
)

var _ store.Trees = (*Store)(nil)

// Bounds of a folder upload's sends: files are sent treeJobs at once (small objects are round
// trips, not bandwidth); a file up to treeSmall bytes is read once into memory, hashed and sent
// from there, a larger one hashed first and sent from the file; one over treeParts bytes goes as
// a multipart upload of DefaultChunk parts, treePartJobs at once, as a file upload does (a part
// that fails is sent again, not the whole file; S3 takes at most 5 GiB in one PUT).
const (
	treeJobs     = 16
	treeSmall    = 1 << 20
	treePartJobs = 4
)

var treeParts int64 = 64 << 20 // a variable for the tests

type treeMeta = store.TreeMeta

func (s *Store) treeKey(id string) string                { return s.key(id, store.TreeListName) }
func (s *Store) treeMetaKey(id string) string            { return s.key(id, store.MetaName) }
func (s *Store) treeDir(id, name string) string          { return s.key(id, name) + "/" }
func (s *Store) treeFileKey(id, name, rel string) string { return s.key(id, name, rel) }

// held is an object of a folder upload as a listing shows it.
type heldObj struct {
	size int64
	etag string
}

// UploadTree is store.Trees.UploadTree for S3.
func (s *Store) UploadTree(ctx context.Context, src store.TreeSource, opts store.TreeOptions) (*store.TreeInfo, error) {
	info, err := s.uploadTree(ctx, src, opts, 0)
	if err == nil {
		s.unreserve(ctx, info.ID)
	}
	return info, err
}

// uploadTree is UploadTree; tries counts the restarts after another run of the same folder won
// the note.
func (s *Store) uploadTree(ctx context.Context, src store.TreeSource, opts store.TreeOptions, tries int) (*store.TreeInfo, error) {
	if err := store.ValidTreeName(src.Name); err != nil {
		return nil, err
	}
	want, err := store.CheckHex(src.Blake3)
	if err != nil {
		return nil, err
	}
	total, err := store.CheckTreeSource(&src)
	if err != nil {
		return nil, err
	}
	progress := opts.Progress
	if progress == nil {
		progress = func(int64) {}
	}
	if _, err := s.checkStore(ctx, true); err != nil {
		return nil, err
	}
	// The note is keyed on the tree's BLAKE3 too, as a file's is, so that two runs of one folder
	// share an upload only when they send the same bytes: objects of an upload are never
	// replaced by other bytes while another run finishes it. Without it from the record, it
	// costs one read of the files first.
	if want == "" {
		if want, err = store.HashTree(ctx, &src); err != nil {
			return nil, err
		}
	}
	note := s.noteKey(src.Path, src.Name+"/", total, want)
	var id string
	var pi *partialInfo
	for try := 0; ; try++ {
		var noteTag string
		var fin *store.TreeInfo
		id, pi, fin, noteTag, err = s.treeResumable(ctx, note, &src, want)
		if err != nil {
			return nil, err
		}
		if fin != nil {
			progress(total)
			return fin, nil
		}
		if pi != nil {
			break
		}
		id, pi, err = s.startTree(ctx, note, noteTag, src.Name, total, want)
		if err == errNoteTaken && try < 3 {
			continue
		}
		if err != nil {
			return nil, err
		}
		break
	}
	held := map[string]heldObj{}
	dir := s.treeDir(id, src.Name)
	if err := s.listObjects(ctx, dir, func(o types.Object) error {
		held[strings.TrimPrefix(aws.ToString(o.Key), dir)] = heldObj{aws.ToInt64(o.Size), strings.Trim(aws.ToString(o.ETag), `"`)}
		return nil
	}); err != nil {
		return nil, s.wrap(manifest.UploadUnreadable, "upload "+id, err)
	}
	sums, err := s.sendTree(ctx, id, &src, held, progress)
	if err != nil {
		return nil, err
	}
	var sum manifest.TreeSum
	m := &treeMeta{Kind: store.KindFolder, Files: len(src.Files), Sizes: make([]int64, len(src.Files))}
	for i, f := range src.Files {
		sum.Add(f.Rel, sums[i])
		m.Sizes[i] = f.Size
		delete(held, f.Rel)
	}
	got := sum.Sum()
	if got != want {
		return nil, manifest.Errorf(manifest.UploadHashMismatch, "%s: the folder's BLAKE3 is %s, the manifest says %s (changed since it was sniffed, or walked with other --exclude/--no-ignore)", src.Path, got, want)
	}
	// What the folder no longer holds (sent by a run before the source changed) goes first.
	var extra []string
	for rel := range held {
		extra = append(extra, dir+rel)
	}
	if err := s.deleteKeys(ctx, extra); err != nil {
		return nil, err
	}
	// A server may let two create-only writes of the note that race both succeed (as Stream
	// finds): the note as it is now says which upload is the folder's. The loser drops its own
	// and takes the winner's, sending what it lacks.
	if cur := s.noteID(ctx, note); cur != "" && cur != id && tries < 3 {
		s.dropPartial(context.WithoutCancel(ctx), id, pi)
		s.unreserve(ctx, id)
		if opts.Progress != nil {
			opts.Progress(-total)
		}
		return s.uploadTree(ctx, src, opts, tries+1)
	}
	m.Info = store.Info{ID: id, Name: src.Name, Size: total, Blake3: got, Made: time.Now().UTC()}
	if err := s.publishTree(ctx, m, store.TreeListing(&sum), path.Base(note)); err != nil {
		return nil, err
	}
	s.client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &s.Bucket, Key: aws.String(s.infoKey(id))})
	for _, f := range src.Files {
		if f.Size > treeParts { // a killed run's multipart upload of it may be left
			s.dropTreeMultiparts(ctx, id)
			break
		}
	}
	ti := &store.TreeInfo{Info: m.Info, Files: make([]store.TreeFile, len(src.Files))}
	for i, f := range sum.Files() {
		ti.Files[i] = store.TreeFile{Rel: f.Rel, Size: m.Sizes[i], Blake3: f.Blake3}
	}
	return ti, nil
}

// treeResumable looks up the source's note (keyed on the folder's path, name, size and BLAKE3
// want): a finished upload of that tree (returned whole), or an unfinished folder upload to
// resume, or nothing; and the note's ETag.
func (s *Store) treeResumable(ctx context.Context, note string, src *store.TreeSource, want string) (string, *partialInfo, *store.TreeInfo, string, error) {
	b, etag, _, err := s.getObject(ctx, note)
	if err != nil {
		return "", nil, nil, "", nil
	}
	var n sourceNote
	if json.Unmarshal(b, &n) != nil || store.ValidID(n.ID) != nil {
		return "", nil, nil, etag, nil
	}
	// The info first: it goes only after the listing is written, so an upload without it that
	// another run is finishing now is found finished below.
	if pi, err := s.readInfo(ctx, n.ID); err == nil {
		if pi.Kind != store.KindFolder || pi.Name != src.Name || pi.Blake3 != want {
			return "", nil, nil, etag, nil
		}
		return n.ID, pi, nil, etag, nil
	}
	if ti, err := s.TreeInfo(ctx, n.ID); err == nil && ti.Name == src.Name && ti.Blake3 == want && store.TreeIntact(ctx, s, n.ID, want) {
		return n.ID, nil, ti, etag, nil
	}
	return "", nil, nil, etag, nil
}

// startTree writes a new folder upload's info, then the source's note (create-only, or over
// the note of an upload that is no more: If-Match).
func (s *Store) startTree(ctx context.Context, note, noteTag, name string, size int64, want string) (string, *partialInfo, error) {
	id, release, err := s.admitNew(ctx, name, size)
	if err != nil {
		return "", nil, err
	}
	fail := func(err error) (string, *partialInfo, error) {
		release()
		return "", nil, err
	}
	pi := &partialInfo{Name: name, Size: size, Made: nowString(), Blake3: want, Kind: store.KindFolder, Note: path.Base(note)}
	if err := s.putJSON(ctx, s.infoKey(id), pi, true); err != nil {
		return fail(s.wrap(manifest.UploadUnreadable, name, err))
	}
	nb, _ := json.Marshal(sourceNote{ID: id})
	in := &awss3.PutObjectInput{Bucket: &s.Bucket, Key: &note, Body: bytes.NewReader(nb), IfNoneMatch: aws.String("*")}
	if noteTag != "" {
		in.IfNoneMatch, in.IfMatch = nil, aws.String(noteTag)
	}
	if _, err := s.client.PutObject(ctx, in); err != nil {
		s.dropPartial(context.WithoutCancel(ctx), id, pi)
		if conflict(err) || notFound(err) {
			return fail(errNoteTaken)
		}
		return fail(s.wrap(manifest.UploadUnreadable, name, err))
	}
	return id, pi, nil
}

// sendTree puts every file of src into P/<id>/<name>/, treeJobs at once, keeping each object
// held already with the file's size and MD5, and returns each file's BLAKE3 (in src's order).
// Progress is told each file's bytes once its object is on the server. ctx cancelled: it stops
// and returns ctx.Err(), what was sent kept for a resume.
func (s *Store) sendTree(ctx context.Context, id string, src *store.TreeSource, held map[string]heldObj, progress func(int64)) ([]string, error) {
	sums := make([]string, len(src.Files))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		mu   sync.Mutex
		next int
		wg   sync.WaitGroup
	)
	for w := 0; w < min(treeJobs, len(src.Files)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 0, treeSmall)
			for ctx.Err() == nil {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(src.Files) {
					return
				}
				f := src.Files[i]
				sum, err := s.sendTreeFile(ctx, id, src, f, held[f.Rel], &buf)
				if err != nil {
					cancel(err)
					return
				}
				sums[i] = sum
				mu.Lock()
				progress(f.Size)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return sums, nil
}

// sendTreeFile makes the object of f equal to the source file and returns its BLAKE3.
func (s *Store) sendTreeFile(ctx context.Context, id string, src *store.TreeSource, f store.TreeFile, have heldObj, buf *[]byte) (string, error) {
	sf, err := src.OpenFile(f)
	if err != nil {
		return "", err
	}
	defer sf.Close()
	h, m := blake3.New(), md5.New()
	var body io.ReadSeeker
	if f.Size <= treeSmall {
		b := (*buf)[:f.Size]
		if _, err := io.ReadFull(io.NewSectionReader(sf, 0, f.Size), b); err != nil {
			return "", manifest.Errorf(manifest.UploadSourceChange, "%s: shorter than its %d bytes: %v", f.Path, f.Size, err)
		}
		h.Write(b)
		m.Write(b)
		body = bytes.NewReader(b)
	} else {
		n, err := io.Copy(io.MultiWriter(h, m), io.NewSectionReader(sf, 0, f.Size))
		if err != nil || n != f.Size {
			return "", manifest.Errorf(manifest.UploadSourceChange, "%s: shorter than its %d bytes (%v)", f.Path, f.Size, err)
		}
		body = io.NewSectionReader(sf, 0, f.Size)
	}
	if err := sf.Unchanged(); err != nil {
		return "", err
	}
	sum, digest := hex.EncodeToString(h.Sum(nil)), m.Sum(nil)
	if f.Size > treeParts {
		return sum, s.sendTreeParts(ctx, id, src.Name, f, sf, sum, have)
	}
	if have.size == f.Size && have.etag == hex.EncodeToString(digest) {
		return sum, nil // sent whole by a run before
	}
	key := s.treeFileKey(id, src.Name, f.Rel)
	if s.treeSent != nil {
		s.treeSent(f.Rel)
	}
	_, err = s.client.PutObject(ctx, &awss3.PutObjectInput{Bucket: &s.Bucket, Key: &key, Body: body,
		ContentLength: aws.Int64(f.Size), ContentMD5: aws.String(base64.StdEncoding.EncodeToString(digest)),
		Metadata: map[string]string{"blake3": sum}}, unsignedPayload)
	if err != nil {
		if errCode(err) == "BadDigest" { // the bytes sent are not those hashed: the file changed
			return "", manifest.Errorf(manifest.UploadSourceChange, "%s: changed while being uploaded", f.Path)
		}
		return "", s.wrap(manifest.UploadUnreadable, "upload "+id+": "+key, err)
	}
	if err := sf.Unchanged(); err != nil {
		return "", err
	}
	return sum, nil
}

// sendTreeParts puts the large file f (hashed already: sum) as a multipart upload of its key,
// unless the object there is this file already (its size, and the BLAKE3 in its metadata: a
// multipart object's ETag is no MD5). The bytes sent are hashed again as they go and must be sum.
// A multipart upload a kill leaves is aborted by the sweep, or when the folder upload finishes.
func (s *Store) sendTreeParts(ctx context.Context, id, name string, f store.TreeFile, sf store.SourceFile, sum string, have heldObj) error {
	key := s.treeFileKey(id, name, f.Rel)
	if have.size == f.Size {
		if out, err := s.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &s.Bucket, Key: &key}); err == nil && out.Metadata["blake3"] == sum {
			return nil
		}
	}
	if s.treeSent != nil {
		s.treeSent(f.Rel)
	}
	mp, err := s.client.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: &s.Bucket, Key: &key,
		Metadata: map[string]string{"blake3": sum}})
	if err != nil {
		return s.wrap(manifest.UploadUnreadable, "upload "+id+": "+key, err)
	}
	pi := &partialInfo{Name: name + "/" + f.Rel, UploadID: aws.ToString(mp.UploadId)}
	abort := func() {
		s.client.AbortMultipartUpload(context.WithoutCancel(ctx), &awss3.AbortMultipartUploadInput{Bucket: &s.Bucket, Key: &key, UploadId: mp.UploadId})
	}
	parts, got, err := s.sendParts(ctx, io.NewSectionReader(sf, 0, f.Size), f.Path, f.Size, DefaultChunk, treePartJobs,
		s.buffers(treePartJobs, DefaultChunk), id, pi, nil, func(int64) {}, nil, s.sent)
	if err == nil && got != sum {
		err = manifest.Errorf(manifest.UploadSourceChange, "%s: changed while being uploaded", f.Path)
	}
	if err == nil {
		err = sf.Unchanged()
	}
	if err == nil {
		_, err = s.client.CompleteMultipartUpload(ctx, &awss3.CompleteMultipartUploadInput{Bucket: &s.Bucket, Key: &key,
			UploadId: mp.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
		err = s.wrap(manifest.UploadUnreadable, "upload "+id+": "+key, err)
	}
	if err == errUploadGone {
		err = manifest.Errorf(manifest.UploadUnreadable, "upload %s: %s: its multipart upload went away (a sweep?)", id, key)
	}
	if err != nil {
		abort()
	}
	return err
}

// dropTreeMultiparts aborts the multipart uploads left under P/<id>/ (a run killed while it sent
// a large file).
func (s *Store) dropTreeMultiparts(ctx context.Context, id string) error {
	mps, err := s.multiparts(ctx, s.key(id)+"/")
	for _, mp := range mps {
		if _, aerr := s.client.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: &s.Bucket, Key: &mp.key, UploadId: &mp.uploadID}); aerr != nil && !notFound(aerr) {
			err = s.wrap(manifest.UploadUnreadable, "abort "+id, aerr)
		}
	}
	return err
}

// publishTree writes the metadata, then the listing create-only (note: the hex of the source
// note's key, in its metadata): the folder upload is finished from that write on. A listing there
// already (another run of the same folder finished first) must be this tree's.
func (s *Store) publishTree(ctx context.Context, m *treeMeta, listing []byte, note string) error {
	b, _ := json.Marshal(m)
	if _, err := s.client.PutObject(ctx, &awss3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String(s.treeMetaKey(m.ID)),
		Body: bytes.NewReader(append(b, '\n'))}); err != nil {
		return s.wrap(manifest.UploadUnreadable, "upload "+m.ID, err)
	}
	_, err := s.client.PutObject(ctx, &awss3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String(s.treeKey(m.ID)),
		Body: bytes.NewReader(listing), IfNoneMatch: aws.String("*"),
		Metadata: map[string]string{"blake3": m.Blake3, "name": m.Name, "size": strconv.FormatInt(m.Size, 10), "files": strconv.Itoa(m.Files), "note": note}})
	if err != nil && !conflict(err) {
		return s.wrap(manifest.UploadUnreadable, "upload "+m.ID, err)
	}
	if err != nil {
		if ti, terr := s.TreeInfo(ctx, m.ID); terr != nil || ti.Blake3 != m.Blake3 {
			return manifest.Errorf(manifest.UploadHashMismatch, "upload %s: finished meanwhile by another run with another tree", m.ID)
		}
	}
	return nil
}

// treeHead is what the listing object's metadata says, nil when there is none.
type treeHead struct {
	name   string
	size   int64
	files  int
	blake3 string
	made   time.Time
	note   string // the hex of its source note's key; "" for a listing written before it was kept
}

// headTree reads the listing object's metadata: nil (and no error) when the upload has none.
func (s *Store) headTree(ctx context.Context, id string) (*treeHead, error) {
	out, err := s.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &s.Bucket, Key: aws.String(s.treeKey(id))})
	if err != nil {
		if notFound(err) {
			return nil, nil
		}
		return nil, s.wrap(manifest.UploadUnreadable, "upload "+id, err)
	}
	md := out.Metadata
	size, serr := strconv.ParseInt(md["size"], 10, 64)
	files, ferr := strconv.Atoi(md["files"])
	if md["name"] == "" || serr != nil || ferr != nil {
		return nil, nil // a file upload named .tree.b3
	}
	if _, err := store.CheckHex(md["blake3"]); err != nil || md["blake3"] == "" {
		return nil, manifest.Errorf(manifest.UploadUnreadable, "upload %s: %s carries no BLAKE3 in its metadata", id, s.treeKey(id))
	}
	return &treeHead{name: md["name"], size: size, files: files, blake3: md["blake3"], made: aws.ToTime(out.LastModified).UTC(), note: md["note"]}, nil
}

// treeInfoOf is a finished folder upload's Info from its listing's metadata.
func (th *treeHead) info(id string) *store.Info {
	return &store.Info{ID: id, Name: th.name, Size: th.size, Blake3: th.blake3, Made: th.made}
}

// TreeInfo is store.Trees.TreeInfo for S3: the metadata and the listing, each checked against
// the other.
func (s *Store) TreeInfo(ctx context.Context, id string) (*store.TreeInfo, error) {
	if err := store.ValidID(id); err != nil {
		return nil, err
	}
	if err := s.exists(ctx, id); err != nil {
		return nil, err
	}
	listing, _, _, err := s.getObject(ctx, s.treeKey(id))
	if err != nil && !notFound(err) {
		return nil, s.wrap(manifest.UploadUnreadable, "upload "+id, err)
	}
	var mb []byte
	if err == nil {
		mb, _, _, err = s.getObject(ctx, s.treeMetaKey(id))
	}
	if notFound(err) {
		if _, ierr := s.Info(ctx, id); ierr == nil {
			return nil, manifest.Errorf(manifest.UploadInvalid, "upload %s: a file, not a folder", id)
		}
		return nil, s.missing(id)
	}
	if err != nil {
		return nil, s.wrap(manifest.UploadUnreadable, "upload "+id, err)
	}
	var m treeMeta
	if json.Unmarshal(mb, &m) != nil || m.ID != id || store.ValidTreeName(m.Name) != nil || m.Kind != store.KindFolder {
		return nil, manifest.Errorf(manifest.UploadUnreadable, "upload %s: %s is damaged", id, s.treeMetaKey(id))
	}
	ti := &store.TreeInfo{Info: m.Info}
	sc := bufio.NewScanner(bytes.NewReader(listing))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		sum, rel, err := ops.ParseB3sumLine(sc.Text())
		if err != nil || store.CheckRel(rel) != nil || len(ti.Files) >= len(m.Sizes) {
			return nil, manifest.Errorf(manifest.UploadUnreadable, "upload %s: %s is damaged", id, s.treeKey(id))
		}
		ti.Files = append(ti.Files, store.TreeFile{Rel: rel, Size: m.Sizes[len(ti.Files)], Blake3: sum})
	}
	if sc.Err() != nil || len(ti.Files) != m.Files || len(m.Sizes) != m.Files {
		return nil, manifest.Errorf(manifest.UploadUnreadable, "upload %s: %s is damaged", id, s.treeKey(id))
	}
	if got := hexSum(listing); got != m.Blake3 {
		return nil, manifest.Errorf(manifest.VerifyMismatch, "upload %s: %s hashes to %s, its metadata says %s (the listing changed)", id, s.treeKey(id), got, m.Blake3)
	}
	return ti, nil
}

// FolderFiles is store.Trees.FolderFiles for S3: one listing of P/<id>/ (a file upload costs no
// more), and for a folder upload one HEAD of its listing; none for an upload the last List or
// FolderFiles saw as a file upload.
func (s *Store) FolderFiles(ctx context.Context, id string) (int, bool, error) {
	if err := store.ValidID(id); err != nil {
		return 0, false, err
	}
	s.treesMu.Lock()
	tree, known := s.trees[id]
	s.treesMu.Unlock()
	if known && !tree {
		return 0, false, nil
	}
	if err := s.exists(ctx, id); err != nil {
		return 0, false, err
	}
	name, tree, err := s.finishedName(ctx, id)
	if err != nil {
		return 0, false, err
	}
	files := 0
	if tree {
		th, err := s.headTree(ctx, id)
		if err != nil {
			return 0, false, err
		}
		if th == nil {
			return 0, false, s.missing(id)
		}
		files = th.files
	} else if name == "" {
		return 0, false, s.missing(id)
	}
	s.treesMu.Lock()
	if s.trees == nil {
		s.trees = map[string]bool{}
	}
	s.trees[id] = tree
	s.treesMu.Unlock()
	return files, tree, nil
}

// getObjectHead is a HEAD of key.
func (s *Store) getObjectHead(ctx context.Context, key string) (*awss3.HeadObjectOutput, error) {
	return s.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &s.Bucket, Key: &key})
}

// OpenTreeFile is store.Trees.OpenTreeFile for S3: the file's object, of a finished folder
// upload only, read as Open reads a file upload's (its ETag held, its BLAKE3 from its metadata).
func (s *Store) OpenTreeFile(ctx context.Context, id, name, rel string) (store.Reader, error) {
	if err := store.ValidID(id); err != nil {
		return nil, err
	}
	if err := store.ValidTreeName(name); err != nil {
		return nil, err
	}
	if err := store.CheckRel(rel); err != nil {
		return nil, err
	}
	if err := s.exists(ctx, id); err != nil {
		return nil, err
	}
	// The listing is looked at once per upload and run: resolve opens every file of a folder,
	// and a finished upload stays finished until a sweep removes it (its objects then answer
	// upload.missing).
	s.treesMu.Lock()
	known := s.opened[id]
	s.treesMu.Unlock()
	if known == "" {
		th, err := s.headTree(ctx, id)
		if err != nil {
			return nil, err
		}
		if th == nil {
			return nil, s.missing(id)
		}
		known = th.name
		s.treesMu.Lock()
		if s.opened == nil {
			s.opened = map[string]string{}
		}
		s.opened[id] = known
		s.treesMu.Unlock()
	}
	if known != name {
		return nil, s.missing(id)
	}
	return s.openKey(ctx, id, rel, s.treeFileKey(id, name, rel))
}

// VerifyTree is store.Trees.VerifyTree for S3: the listing against the metadata, every file's
// object read whole (treeJobs at once) against its listed size and BLAKE3, and any object of the
// upload the listing does not name, each named.
func (s *Store) VerifyTree(ctx context.Context, id string, progress func(int64)) (*store.TreeInfo, error) {
	ti, err := s.TreeInfo(ctx, id)
	if err != nil {
		return nil, err
	}
	listed := map[string]bool{}
	for _, f := range ti.Files {
		listed[f.Rel] = true
	}
	c := store.TreeCheck{Jobs: treeJobs,
		Open: func(ctx context.Context, rel string) (io.ReadCloser, error) {
			out, err := s.client.GetObject(ctx, &awss3.GetObjectInput{Bucket: &s.Bucket, Key: aws.String(s.treeFileKey(id, ti.Name, rel))})
			if notFound(err) {
				return nil, s.missing(id)
			}
			if err != nil {
				return nil, s.wrap(manifest.UploadUnreadable, "upload "+id, err)
			}
			return out.Body, nil
		},
		ReadErr: func(rel string, n int64, err error) error {
			return s.readErr(id, s.treeFileKey(id, ti.Name, rel), n, err)
		}}
	top := s.key(id) + "/"
	dir := s.treeDir(id, ti.Name)
	if err := s.listObjects(ctx, top, func(o types.Object) error {
		k := aws.ToString(o.Key)
		switch rel, in := strings.CutPrefix(k, dir); {
		case in && !listed[rel]:
			c.Extra = append(c.Extra, manifest.Quote(rel)+" was added")
		case in:
		case k == s.treeKey(id), k == s.treeMetaKey(id), k == s.usedKey(id):
		default:
			c.Extra = append(c.Extra, fmt.Sprintf("%s: unexpected object beside the folder", k))
		}
		return nil
	}); err != nil {
		return ti, s.wrap(manifest.UploadUnreadable, "upload "+id, err)
	}
	return ti, store.CheckTree(ctx, ti, c, progress)
}

// treeObject tells whether name (a key's part after P/<id>/) is a folder upload's.
func treeObject(name string) bool {
	return strings.Contains(name, "/") || name == store.MetaName || name == store.TreeListName
}

// treeSeen is what List saw of one folder upload's objects.
type treeSeen struct {
	dir         string // the folder's name, from its files' keys
	size        int64
	list, meta  bool
	listMade    time.Time
	first, last time.Time
}

// note takes in one object; false when it is no folder upload's.
func (t *treeSeen) note(name string, o types.Object) bool {
	at := aws.ToTime(o.LastModified)
	if t.first.IsZero() || at.Before(t.first) {
		t.first = at
	}
	if at.After(t.last) {
		t.last = at
	}
	switch {
	case name == store.MetaName:
		t.meta = true
	case name == store.TreeListName:
		t.list, t.listMade = true, at
	default:
		d, rel, _ := strings.Cut(name, "/")
		if store.ValidTreeName(d) != nil || store.CheckRel(rel) != nil || t.dir != "" && t.dir != d {
			return false
		}
		t.dir = d
		t.size += aws.ToInt64(o.Size)
	}
	return true
}

// dropTreeObjects removes the objects of the unfinished folder upload id: everything under
// P/<id>/, its marker included. A folder upload finished meanwhile (its listing there) is left,
// and reported finished.
func (s *Store) dropTreeObjects(ctx context.Context, id string) (bool, error) {
	var keys []string
	finished := false
	if err := s.listObjects(ctx, s.key(id)+"/", func(o types.Object) error {
		k := aws.ToString(o.Key)
		finished = finished || k == s.treeKey(id)
		keys = append(keys, k)
		return nil
	}); err != nil {
		return false, s.wrap(manifest.UploadUnreadable, "upload "+id, err)
	}
	if finished {
		return true, nil
	}
	if err := s.deleteKeys(ctx, keys); err != nil {
		return false, err
	}
	return false, s.dropTreeMultiparts(ctx, id)
}

// dropTree removes the finished folder upload id whose marker is a tombstone: its source note
// when it names id (first: a run of the same folder from now on starts a new upload rather than
// name this one), its listing (from then on it is not finished), then its files and metadata,
// then the marker.
func (s *Store) dropTree(ctx context.Context, id string) error {
	th, err := s.headTree(ctx, id)
	if err != nil {
		return err
	}
	if th != nil {
		s.dropNote(ctx, th.note, id)
	}
	if err := s.deleteKeys(ctx, []string{s.treeKey(id)}); err != nil {
		return err
	}
	var keys []string
	if err := s.listObjects(ctx, s.key(id)+"/", func(o types.Object) error {
		if k := aws.ToString(o.Key); k != s.usedKey(id) {
			keys = append(keys, k)
		}
		return nil
	}); err != nil {
		return s.wrap(manifest.UploadUnreadable, "upload "+id, err)
	}
	if err := s.deleteKeys(ctx, keys); err != nil {
		return err
	}
	if err := s.dropTreeMultiparts(ctx, id); err != nil {
		return err
	}
	return s.deleteKeys(ctx, []string{s.usedKey(id)})
}

// dropNote removes the source note whose key's hex is note when it names the upload id, with
// If-Match the ETag read, so that a note another run wrote since for another upload stays; never
// a note naming another id. It is tidying, not a removal anyone relies on: a note left (a server
// that refuses the condition, a sweep killed first) names an upload that is no more, which the
// next upload of that folder finds and writes over.
func (s *Store) dropNote(ctx context.Context, note, id string) {
	if h, err := store.CheckHex(note); err != nil || h == "" || h != note {
		return
	}
	key := s.key(internalDir, "source", note)
	b, etag, _, err := s.getObject(ctx, key)
	var n sourceNote
	if err != nil || json.Unmarshal(b, &n) != nil || n.ID != id || etag == "" {
		return
	}
	s.client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &s.Bucket, Key: &key, IfMatch: &etag})
}

// treeLeftover is the entry of the objects of a folder upload under P/<id>/ that has no info:
// nil when there are none, finished when its listing and metadata are there.
func (s *Store) treeLeftover(ctx context.Context, id string) (*store.Entry, error) {
	var t treeSeen
	n := 0
	err := s.listObjects(ctx, s.key(id)+"/", func(o types.Object) error {
		if name := strings.TrimPrefix(aws.ToString(o.Key), s.key(id)+"/"); treeObject(name) {
			t.note(name, o)
			n++
		}
		return nil
	})
	if err != nil || n == 0 {
		return nil, s.wrap(manifest.UploadUnreadable, "upload "+id, err)
	}
	return &store.Entry{ID: id, Name: t.dir, Size: t.size, Finished: t.list && t.meta, Made: t.first.UTC(), LastUsed: t.last.UTC()}, nil
}
