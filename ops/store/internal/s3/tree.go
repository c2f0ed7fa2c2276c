package s3

// Folder uploads (store.Trees) on S3: the layout and the order of the writes are docs/store.md's
// ("S3 stores", "Folder uploads on S3"). The listing P/<id>/.tree.b3, written create-only last,
// is what makes a folder upload finished; a one-file upload's P/<id>/ never holds .upload.json,
// which tells a folder upload from a file upload named .tree.b3.

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// Bounds of a folder upload's sends: files are sent treeJobs at once (small objects are round
// trips, not bandwidth), each hashed first and sent from the source file (a second read, from the
// page cache); one over treeParts bytes goes as a multipart upload of DefaultChunk parts,
// treePartJobs at once, as a file upload does (a part that fails is sent again, not the whole
// file; S3 takes at most 5 GiB in one PUT).
const (
	treeJobs     = 16
	treePartJobs = 4
)

var treeParts int64 = 64 << 20 // a variable for the tests

func (s *Store) treeKey(id string) string                { return s.key(id, store.TreeListName) }
func (s *Store) treeMetaKey(id string) string            { return s.key(id, store.MetaName) }
func (s *Store) treeDir(id, name string) string          { return s.key(id, name) + "/" }
func (s *Store) treeFileKey(id, name, rel string) string { return s.key(id, name, rel) }

// S3's folder uploads are the rules of package store (store.UploadTree, ...) over these
// primitives: files sent treeJobs at once, each object kept by a resume when its size and MD5
// are the source file's, the listing written create-only last.

func (s *Store) TreeProperties() store.TreeProperties {
	return store.TreeProperties{Jobs: treeJobs, VerifyJobs: treeJobs, FlatList: true}
}

// TreeHashFirst checks (or makes) the store; the source note is keyed on the tree's BLAKE3 too,
// as a file's is, so that two runs of one folder share an upload only when they send the same
// bytes: objects of an upload are never replaced by other bytes while another run finishes it.
// Without it from the record, it costs one read of the files first.
func (s *Store) TreeHashFirst(ctx context.Context, _ string, _ int64) (bool, error) {
	_, err := s.checkStore(ctx, true)
	return true, err
}

// StartTree looks up the source's note: a finished upload of the tree, or the unfinished one to
// resume (what it holds listed once), or a new one started: its info written, then the note
// (start), as a file's stage does.
func (s *Store) StartTree(ctx context.Context, st store.TreeStart) (string, store.TreeWrite, error) {
	src := st.Src
	note := s.notes.Key(src.Name+"/", st.Size, st.Blake3)
	id, pi, err := s.notes.FindTree(ctx, note, st, func(string) (*partialInfo, error) {
		return &partialInfo{Name: src.Name, Size: st.Size, Made: nowString(), Blake3: st.Blake3, Kind: store.KindFolder, Note: path.Base(note)}, nil
	})
	if err != nil || pi == nil {
		return id, nil, err // finished: the engine checks it whole before it names it
	}
	l, err := s.up.WalkID(ctx, id)
	if err != nil {
		return "", nil, err
	}
	return "", &treeWrite{s: s, id: id, name: src.Name, pi: pi, note: note, try: st.Try, held: l.Under(src.Name)}, nil
}

// treeWrite is store.TreeWrite: an unfinished folder upload, and the objects of its folder a run
// before sent (held: read only while files are sent).
type treeWrite struct {
	s    *Store
	id   string
	name string
	pi   *partialInfo
	note string
	try  int
	held map[string]store.FolderObject
}

func (t *treeWrite) ID() string { return t.id }

// Stored: S3 checks a held object by its size and MD5 as the file is committed.
func (t *treeWrite) Stored(store.TreeFile) (io.ReadCloser, error) { return nil, nil }

func (t *treeWrite) Close(error) {}

// Create starts the object of f, sent from the source file once hashed (its MD5 as it is read);
// over treeParts, as a multipart upload.
func (t *treeWrite) Create(_ context.Context, f store.TreeFile, sf store.TreeSourceFile, _ bool) (store.TreeFileWrite, error) {
	w := &fileWrite{t: t, f: f, sf: sf}
	if f.Size <= treeParts {
		w.md5 = md5.New()
	}
	return w, nil
}

// fileWrite is the object of one file being sent.
type fileWrite struct {
	t   *treeWrite
	f   store.TreeFile
	sf  store.TreeSourceFile
	md5 hash.Hash
}

func (w *fileWrite) Write(b []byte) (int, error) {
	if w.md5 != nil {
		w.md5.Write(b)
	}
	return len(b), nil
}

func (w *fileWrite) Abort() {}

// Commit makes the object of the file equal to the bytes hashed (sum), keeping the object held
// already with the file's size and MD5, and sending it otherwise with its Content-MD5, so that
// the server checks it got the bytes hashed.
func (w *fileWrite) Commit(ctx context.Context, sum string) error {
	s, t, f := w.t.s, w.t, w.f
	have := t.held[f.Rel]
	if f.Size > treeParts {
		return s.sendTreeParts(ctx, t.id, t.name, f, w.sf, sum, have.Size)
	}
	digest := w.md5.Sum(nil)
	if have.Size == f.Size && strings.Trim(have.Version, `"`) == hex.EncodeToString(digest) {
		return nil // sent whole by a run before
	}
	key := s.treeFileKey(t.id, t.name, f.Rel)
	_, err := s.client.PutObject(ctx, &awss3.PutObjectInput{Bucket: &s.Bucket, Key: &key, Body: io.NewSectionReader(w.sf, 0, f.Size),
		ContentLength: aws.Int64(f.Size), ContentMD5: aws.String(base64.StdEncoding.EncodeToString(digest)),
		Metadata: map[string]string{"blake3": sum}}, unsignedPayload)
	if err != nil {
		if errCode(err) == "BadDigest" { // the bytes sent are not those hashed: the file changed
			return fault.Errorf(fault.UploadSourceChange, "%s: changed while being uploaded", f.Path)
		}
		return s.wrap(fault.UploadUnreadable, "upload "+t.id+": "+key, err)
	}
	return w.sf.Unchanged()
}

// ReadDir gives the objects of the folder a run before sent, as StartTree listed them.
func (t *treeWrite) ReadDir(context.Context, string) ([]store.TreeEntry, error) {
	return store.FlatEntries(t.held, func(o store.FolderObject) int64 { return o.Size }), nil
}

// Remove deletes the objects of the files rels.
func (t *treeWrite) Remove(ctx context.Context, rels []string) error {
	keys := make([]string, len(rels))
	for i, rel := range rels {
		keys[i] = t.s.treeDir(t.id, t.name) + rel
		delete(t.held, rel)
	}
	return t.s.deleteKeys(ctx, keys)
}

// Publish writes the metadata and the listing (store.PutFolderUpload) under the source note
// (store.Notes.Publish).
func (t *treeWrite) Publish(ctx context.Context, m *store.TreeMeta, files []store.TreeFile, listing []byte) error {
	s := t.s
	err := s.notes.Publish(ctx, t.note, t.id, t.pi, t.try, store.ErrTreeLost, func(ctx context.Context) error {
		return store.PutFolderUpload(ctx, objects{s}, m, path.Base(t.note), listing)
	})
	if err == nil && slices.ContainsFunc(files, func(f store.TreeFile) bool { return f.Size > treeParts }) {
		s.dropMultiparts(ctx, t.id) // a killed run's multipart upload of a large file may be left
	}
	return err
}

// sendTreeParts puts the large file f (hashed already: sum) as a multipart upload of its key,
// unless the object there is this file already (its size, and the BLAKE3 in its metadata: a
// multipart object's ETag is no MD5). The bytes sent are hashed again as they go and must be sum.
// A multipart upload a kill leaves is aborted by the sweep, or when the folder upload finishes.
func (s *Store) sendTreeParts(ctx context.Context, id, name string, f store.TreeFile, sf store.SourceFile, sum string, held int64) error {
	key := s.treeFileKey(id, name, f.Rel)
	if held == f.Size {
		if out, err := s.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &s.Bucket, Key: &key}); err == nil && out.Metadata["blake3"] == sum {
			return nil
		}
	}
	err := s.putMultipart(ctx, key, sum, sf, f.Size, false, func(sent string) error {
		if sent != sum {
			return fault.Errorf(fault.UploadSourceChange, "%s: changed while being uploaded", f.Path)
		}
		return sf.Unchanged()
	})
	return s.wrap(fault.UploadUnreadable, "upload "+id+": "+key, err)
}

// dropMultiparts aborts the multipart uploads left under P/<id>/: a folder upload's (a run
// killed while it sent a large file), or a file upload's that no info names (a stage killed
// before it wrote one).
func (s *Store) dropMultiparts(ctx context.Context, id string) error {
	mps, err := objects{s}.Multiparts(ctx, id+"/")
	for _, mp := range mps {
		if _, aerr := s.client.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: &s.Bucket, Key: &mp.Key, UploadId: &mp.UploadID}); aerr != nil && !notFound(aerr) {
			err = s.wrap(fault.UploadUnreadable, "abort "+id, aerr)
		}
	}
	return err
}

// headTree reads the listing object's metadata: nil (and no error) when the upload has none, or
// when it is a file upload named .tree.b3.
func (s *Store) headTree(ctx context.Context, id string) (*store.ListingHead, error) {
	out, err := s.headObj(ctx, id, store.TreeListName)
	if fault.CodeOf(err) == fault.UploadMissing {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return store.ReadListingHead(id, s.treeKey(id), out.Metadata, aws.ToTime(out.LastModified))
}

// ReadTreeObject reads the metadata or the listing of the folder upload id (a one-file upload
// never holds .upload.json: the engine then asks Info).
func (s *Store) ReadTreeObject(ctx context.Context, id, name string) ([]byte, string, error) {
	key := s.key(id, name)
	if name == store.MetaName {
		if err := s.exists(ctx, id); err != nil {
			return nil, key, err
		}
	}
	o, err := s.readObjectUpTo(ctx, key, int64(store.TreeObjectMax)+1)
	if err != nil {
		return nil, key, s.uploadErr(id, err)
	}
	return o.body, key, nil
}

// OpenTreeObject opens the file's object, of a finished folder upload only, read as Open reads a
// file upload's (its ETag held, an error while its bytes come coded), for resolve and verify.
func (s *Store) OpenTreeObject(ctx context.Context, id, name, rel string) (io.ReadCloser, error) {
	if err := s.exists(ctx, id); err != nil {
		return nil, err
	}
	if err := s.up.FinishedTree(ctx, id, name); err != nil {
		return nil, err
	}
	return s.openKey(ctx, id, "", s.treeFileKey(id, name, rel))
}

// ReadTreeDir lists the upload's objects by prefix (FlatList, store.ObjectUploads.TreeDir).
func (s *Store) ReadTreeDir(ctx context.Context, ti *store.TreeInfo, _ string) ([]store.TreeEntry, error) {
	return s.up.TreeDir(ctx, ti.ID)
}
