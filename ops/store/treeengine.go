package store

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops"
	"github.com/zeebo/blake3"
)

// The rules of folder uploads, written once over a TreeBackend (prim.go): a backend's Trees
// methods are these functions called with itself.

// TreesOn is Trees over the primitives its call gives: the rules of this package over a backend's
// TreeBackend, opened for each call (create: for an upload, which may make the store).
type TreesOn func(ctx context.Context, create bool) (TreeBackend, error)

func (on TreesOn) UploadTree(ctx context.Context, src TreeSource, opts TreeOptions) (*TreeInfo, error) {
	b, err := on(ctx, true)
	if err != nil {
		return nil, err
	}
	return UploadTree(ctx, b, src, opts)
}

func (on TreesOn) TreeInfo(ctx context.Context, id string) (*TreeInfo, error) {
	b, err := on(ctx, false)
	if err != nil {
		return nil, err
	}
	return TreeInfoOf(ctx, b, id)
}

func (on TreesOn) OpenTreeFile(ctx context.Context, id, name, rel string) (io.ReadCloser, error) {
	b, err := on(ctx, false)
	if err != nil {
		return nil, err
	}
	return OpenTree(ctx, b, id, name, rel)
}

func (on TreesOn) VerifyTree(ctx context.Context, id string, progress func(int64)) (*TreeInfo, error) {
	b, err := on(ctx, false)
	if err != nil {
		return nil, err
	}
	return VerifyTreeOf(ctx, b, id, progress)
}

func (on TreesOn) FolderFiles(ctx context.Context, id string) (int, bool, error) {
	b, err := on(ctx, false)
	if err != nil {
		return 0, false, err
	}
	return FolderFilesOf(ctx, b, id)
}

// UploadTree is Trees.UploadTree over b: the source checked, the tree found again when a finished
// upload of it is still intact, else its unfinished upload resumed (each file already stored
// whole and equal to the source kept) or a new one written, hashed as it is copied, and
// published create-only with its listing.
func UploadTree(ctx context.Context, b TreeBackend, src TreeSource, opts TreeOptions) (*TreeInfo, error) {
	if err := ValidTreeName(src.Name); err != nil {
		return nil, err
	}
	want, err := CheckHex(src.Blake3)
	if err != nil {
		return nil, err
	}
	total, err := CheckTreeSource(&src)
	if err != nil {
		return nil, err
	}
	progress := opts.Progress
	if progress == nil {
		progress = func(int64) {}
	}
	first, err := b.TreeHashFirst(ctx, src.Name, total)
	if err != nil {
		return nil, err
	}
	if want == "" && first {
		if want, err = HashTree(ctx, &src); err != nil {
			return nil, err
		}
	}
	st := TreeStart{Src: &src, Size: total, Blake3: want}
	for {
		found, w, err := b.StartTree(ctx, st)
		if err != nil {
			return nil, err
		}
		if found != "" {
			// A finished upload is named again only when it is this tree (its name and BLAKE3)
			// and still intact (its files read back hash to its listing, and the listing to the
			// folder's BLAKE3); any other is avoided, and the folder uploaded afresh, which is
			// how a user repairs a damaged one (docs/store.md).
			if ti, err := VerifyTreeOf(ctx, b, found, nil); err == nil && ti.Name == src.Name && ti.Blake3 == want && b.MarkUsed(ctx, []string{found}, time.Now()) == nil {
				progress(total)
				return TreeInfoOf(ctx, b, found)
			}
			st.Avoid = found
			continue
		}
		ti, err := writeTree(ctx, w, &src, total, want, b.TreeProperties(), progress)
		w.Close(err)
		if err == ErrTreeLost {
			if opts.Progress != nil {
				opts.Progress(-total)
			}
			st.Try++
			continue
		}
		return ti, err
	}
}

// writeTree drops from w what the source no longer holds, writes every file of src through w
// (props.Jobs at once; each one a run before stored whole and equal to the source kept), checks
// the tree's BLAKE3 against want ("": not checked) and publishes it.
func writeTree(ctx context.Context, w TreeWrite, src *TreeSource, total int64, want string, props TreeProperties, progress func(int64)) (*TreeInfo, error) {
	held, err := dropStale(ctx, w, src, props.FlatList)
	if err != nil {
		return nil, err
	}
	sums, err := putTreeFiles(ctx, w, src, held, props.Jobs, progress)
	if err != nil {
		return nil, err
	}
	var sum manifest.TreeSum
	sizes := make([]int64, len(src.Files))
	for i, f := range src.Files {
		sum.Add(f.Rel, sums[i])
		sizes[i] = f.Size
	}
	got := sum.Sum()
	if want != "" && got != want {
		return nil, fault.Errorf(fault.UploadHashMismatch, "%s: the folder's BLAKE3 is %s, the manifest says %s (changed since it was sniffed, or walked with other --exclude/--no-ignore)", src.Path, got, want)
	}
	m := &TreeMeta{Info: Info{ID: w.ID(), Name: src.Name, Size: total, Blake3: got, Made: time.Now().UTC()},
		Kind: KindFolder, Files: len(src.Files), Sizes: sizes}
	ti := &TreeInfo{Info: m.Info, Files: make([]TreeFile, len(src.Files))}
	for i, f := range sum.Files() {
		ti.Files[i] = TreeFile{Rel: f.Rel, Size: sizes[i], Blake3: f.Blake3}
	}
	listing := TreeListing(&sum)
	if len(listing) > TreeObjectMax {
		return nil, fault.Errorf(fault.UploadInvalid, "%s: its listing of %d files is %d bytes, more than a store keeps (%d)", src.Path, len(src.Files), len(listing), TreeObjectMax)
	}
	if err := w.Publish(ctx, m, ti.Files, listing); err != nil {
		return nil, err
	}
	return ti, nil
}

// dropStale removes from the unfinished tree w what a run before stored and src no longer holds
// (a file, a folder none of its files is in, anything else: also what stands where src has a
// folder), so that what Publish makes finished is the source's files and nothing else, and
// returns the size of each file of src that w holds. It walks what w holds through its ReadDir,
// as verify walks a finished tree.
func dropStale(ctx context.Context, w TreeWrite, src *TreeSource, flat bool) (map[string]int64, error) {
	top, err := w.ReadDir(ctx, "")
	if err != nil || len(top) == 0 { // nothing there: a new upload
		return nil, err
	}
	files := make(map[string]bool, len(src.Files))
	dirs := map[string]bool{}
	for _, f := range src.Files {
		files[f.Rel] = true
	}
	for _, d := range TreeDirs(src.Files) {
		dirs[d] = true
	}
	readDir := func(dir string) ([]TreeEntry, error) {
		if dir == "" {
			return top, nil
		}
		return w.ReadDir(ctx, dir)
	}
	var stale []string
	held := map[string]int64{}
	err = walkTree(flat, readDir,
		func(rel string, e TreeEntry) bool {
			switch {
			case e.File && files[rel]:
				held[rel] = e.Size
			case e.Dir && e.Skip != "": // not entered, and not removed: the backend does not go there
			case e.Dir && dirs[rel]:
				return true
			default:
				stale = append(stale, rel)
			}
			return false
		})
	if err == nil && len(stale) > 0 {
		err = w.Remove(ctx, stale)
	}
	return held, err
}

// walkTree lists a tree through readDir from its top ("") down, calling visit with each entry and
// its path from the top, and entering each folder visit says to (flat: readDir of the top gave
// every file below it, and is asked no more).
func walkTree(flat bool, readDir func(dir string) ([]TreeEntry, error), visit func(rel string, e TreeEntry) (enter bool)) error {
	var walk func(dir string) error
	walk = func(dir string) error {
		es, err := readDir(dir)
		if err != nil {
			return err
		}
		for _, e := range es {
			r := e.Name
			if dir != "" {
				r = dir + "/" + e.Name
			}
			if visit(r, e) && e.Dir && !flat {
				if err := walk(r); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk("")
}

// treeBufs are the buffers of a tree's writes: each worker takes two (the source's, and the
// stored copy's that a resume compares with it).
var treeBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// putTreeFiles writes every file of src through w, jobs at once (1: in order, in this goroutine),
// and returns each file's BLAKE3 in src's order; held is the size of each file w holds already.
// progress is told each file's bytes once it is written. ctx cancelled: it stops and returns
// ctx's error, what was written kept for a resume.
func putTreeFiles(ctx context.Context, w TreeWrite, src *TreeSource, held map[string]int64, jobs int, progress func(int64)) ([]string, error) {
	sums := make([]string, len(src.Files))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		mu   sync.Mutex
		next int
		wg   sync.WaitGroup
	)
	work := func() {
		p := treePut{h: blake3.New(), buf: treeBufs.Get().(*[]byte), sbuf: treeBufs.Get().(*[]byte)}
		defer treeBufs.Put(p.buf)
		defer treeBufs.Put(p.sbuf)
		for ctx.Err() == nil {
			mu.Lock()
			i := next
			next++
			mu.Unlock()
			if i >= len(src.Files) {
				return
			}
			f := src.Files[i]
			sum, err := p.put(ctx, w, src, f, held)
			if err != nil {
				cancel(err)
				return
			}
			sums[i] = sum
			mu.Lock()
			progress(f.Size)
			mu.Unlock()
		}
	}
	if jobs <= 1 {
		work()
	} else {
		for range min(jobs, len(src.Files)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				work()
			}()
		}
		wg.Wait()
	}
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return sums, nil
}

// PutTreeFile writes the file f of src through w, as UploadTree does for each file of a tree w
// holds nothing of yet, and returns its BLAKE3.
func PutTreeFile(ctx context.Context, w TreeWrite, src *TreeSource, f TreeFile) (string, error) {
	p := treePut{h: blake3.New(), buf: treeBufs.Get().(*[]byte), sbuf: treeBufs.Get().(*[]byte)}
	defer treeBufs.Put(p.buf)
	defer treeBufs.Put(p.sbuf)
	return p.put(ctx, w, src, f, nil)
}

// treePut is one worker's state.
type treePut struct {
	h         *blake3.Hasher
	buf, sbuf *[]byte
}

// put makes the stored copy of f equal to the source and returns the source's BLAKE3. A copy a
// run before left (held: its size), whole and equal to the source byte for byte, is kept;
// anything else there is replaced.
func (p *treePut) put(ctx context.Context, w TreeWrite, src *TreeSource, f TreeFile, held map[string]int64) (string, error) {
	sf, err := src.OpenFile(f)
	if err != nil {
		return "", err
	}
	defer sf.Close()
	size, there := held[f.Rel]
	if there && size == f.Size {
		have, err := w.Stored(f)
		if err != nil {
			return "", err
		}
		if have != nil {
			sum, ok := p.same(have, sf, f.Size)
			have.Close()
			if ok {
				return sum, nil
			}
		}
	}
	out, err := w.Create(ctx, f, sf, there)
	if err != nil {
		return "", err
	}
	r := io.NewSectionReader(sf, 0, f.Size)
	buf := *p.buf
	p.h.Reset()
	var n int64
	for {
		k, rerr := r.Read(buf)
		if k > 0 {
			p.h.Write(buf[:k])
			if _, err := out.Write(buf[:k]); err != nil {
				out.Abort()
				return "", err
			}
			n += int64(k)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			out.Abort()
			return "", fault.Errorf(fault.FileUnreadable, "%s: %v", f.Path, rerr)
		}
	}
	if n != f.Size {
		out.Abort()
		return "", fault.Errorf(fault.UploadSourceChange, "%s: changed while being uploaded", f.Path)
	}
	if err := sf.Unchanged(); err != nil {
		out.Abort()
		return "", err
	}
	var sum [32]byte
	s := hex.EncodeToString(p.h.Sum(sum[:0]))
	if err := out.Commit(ctx, s); err != nil {
		return "", err
	}
	return s, nil
}

// same reports whether have (a stored copy of size bytes) is equal to the source; then it
// returns the source's BLAKE3, read once.
func (p *treePut) same(have io.Reader, sf SourceFile, size int64) (string, bool) {
	src := io.NewSectionReader(sf, 0, size)
	buf, sbuf := *p.buf, *p.sbuf
	p.h.Reset()
	var n int64
	for {
		k, err := io.ReadFull(src, sbuf)
		if k > 0 {
			if _, herr := io.ReadFull(have, buf[:k]); herr != nil || !bytes.Equal(buf[:k], sbuf[:k]) {
				return "", false
			}
			p.h.Write(sbuf[:k])
			n += int64(k)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return "", false
		}
	}
	if n != size || sf.Unchanged() != nil {
		return "", false
	}
	var sum [32]byte
	return hex.EncodeToString(p.h.Sum(sum[:0])), true
}

// TreeInfoOf is Trees.TreeInfo over b: the listing and the metadata of the finished folder
// upload id, each checked against the other. upload.invalid for a finished upload of one file,
// upload.missing for no finished upload.
func TreeInfoOf(ctx context.Context, b TreeBackend, id string) (*TreeInfo, error) {
	if err := ValidID(id); err != nil {
		return nil, err
	}
	// The metadata first (its kind tells a file upload's), then the listing: on a backend that
	// writes the listing last (S3), it is what makes a folder upload finished.
	m, mwhere, err := readTreeMeta(ctx, b, id)
	if err != nil {
		return nil, err
	}
	if m.Kind != KindFolder {
		return nil, fault.Errorf(fault.UploadInvalid, "upload %s: a file (%s), not a folder", id, m.Name)
	}
	if ValidTreeName(m.Name) != nil {
		return nil, fault.Errorf(fault.UploadUnreadable, "upload %s: %s is damaged", id, mwhere)
	}
	listing, lwhere, err := b.ReadTreeObject(ctx, id, TreeListName)
	if err != nil {
		return nil, err
	}
	ti := &TreeInfo{Info: m.Info}
	damaged := fault.Errorf(fault.UploadUnreadable, "upload %s: %s is damaged", id, lwhere)
	if len(listing) > TreeObjectMax {
		return nil, damaged
	}
	sc := bufio.NewScanner(bytes.NewReader(listing))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		sum, rel, err := ops.ParseB3sumLine(sc.Text())
		if err != nil || CheckRel(rel) != nil || len(ti.Files) >= len(m.Sizes) {
			return nil, damaged
		}
		ti.Files = append(ti.Files, TreeFile{Rel: rel, Size: m.Sizes[len(ti.Files)], Blake3: sum})
	}
	if sc.Err() != nil || len(ti.Files) != m.Files || len(m.Sizes) != m.Files {
		return nil, damaged
	}
	h := blake3.Sum256(listing)
	if got := hex.EncodeToString(h[:]); got != m.Blake3 {
		return nil, fault.Errorf(fault.VerifyMismatch, "upload %s: %s hashes to %s, its metadata says %s (the listing changed)", id, lwhere, got, m.Blake3)
	}
	return ti, nil
}

// FolderFilesOf is Trees.FolderFiles over b: whether the finished upload id is a folder upload,
// and its files, from its metadata alone.
func FolderFilesOf(ctx context.Context, b TreeBackend, id string) (int, bool, error) {
	if err := ValidID(id); err != nil {
		return 0, false, err
	}
	m, _, err := readTreeMeta(ctx, b, id)
	if err != nil {
		return 0, false, err
	}
	return m.Files, m.Kind == KindFolder, nil
}

// readTreeMeta reads the metadata of the finished upload id (ReadTreeObject) and where it is:
// a file upload's (no Kind) when there is none and Info finds the upload (metaObject).
func readTreeMeta(ctx context.Context, b TreeBackend, id string) (*TreeMeta, string, error) {
	mb, where, err := b.ReadTreeObject(ctx, id, MetaName)
	m, err := metaObject(id, mb, where, err, func() (*Info, error) { return b.Info(ctx, id) })
	return m, where, err
}

// ParseTreeMeta reads the metadata b of the upload id, a file upload's or a folder upload's
// (Kind): upload.unreadable, naming where it is, when it is not one of upload id.
func ParseTreeMeta(id string, b []byte, where string) (*TreeMeta, error) {
	var m TreeMeta
	if json.Unmarshal(b, &m) != nil || Recognize(id, m.ID, false, &m.Info) != nil {
		return nil, fault.Errorf(fault.UploadUnreadable, "upload %s: %s is damaged", id, where)
	}
	return &m, nil
}

// OpenTree is Trees.OpenTreeFile over b: id, name and rel checked, then the backend's guarded
// open.
func OpenTree(ctx context.Context, b TreeBackend, id, name, rel string) (io.ReadCloser, error) {
	if err := ValidID(id); err != nil {
		return nil, err
	}
	if err := ValidTreeName(name); err != nil {
		return nil, err
	}
	if err := CheckRel(rel); err != nil {
		return nil, err
	}
	return b.OpenTreeObject(ctx, id, name, rel)
}

// VerifyTreeOf is Trees.VerifyTree over b: the listing against the metadata (TreeInfoOf), what
// the upload holds (treeExtra), and every file read whole against its listed size and BLAKE3
// (CheckTree), each file that changed, went missing or was added named.
func VerifyTreeOf(ctx context.Context, b TreeBackend, id string, progress func(int64)) (*TreeInfo, error) {
	ti, err := TreeInfoOf(ctx, b, id)
	if err != nil {
		return nil, err
	}
	listed := make(map[string]bool, len(ti.Files))
	for _, f := range ti.Files {
		listed[f.Rel] = true
	}
	extra, err := treeExtra(ctx, b, ti, listed)
	if err != nil {
		return ti, err
	}
	c := TreeCheck{Jobs: b.TreeProperties().VerifyJobs, Extra: extra,
		Open: func(ctx context.Context, rel string) (io.ReadCloser, error) {
			return b.OpenTreeObject(ctx, ti.ID, ti.Name, rel)
		},
		ReadErr: func(rel string, _ int64, err error) error {
			if fault.CodeOf(err) != "" || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return err // coded by the backend's reader (S3's: store.unreachable), or stopped
			}
			return fault.Errorf(fault.UploadUnreadable, "upload %s: %s: %v", ti.ID, manifest.Quote(rel), err)
		}}
	return ti, CheckTree(ctx, ti, c, progress)
}

// treeExtra reads the upload ti's own folder through ReadTreeDir and names what is there beside
// its folder and no part of the upload (BesideUpload); then it walks the folder and names what
// the listing does not: a file added, a folder the backend finds wrong or does not enter,
// anything that is neither a regular file nor a folder.
func treeExtra(ctx context.Context, b TreeBackend, ti *TreeInfo, listed map[string]bool) ([]TreeFault, error) {
	top, err := b.ReadTreeDir(ctx, ti, "")
	if err != nil {
		return nil, err
	}
	flat := b.TreeProperties().FlatList
	var beside []string
	var files []TreeEntry // flat: the folder's, by their paths from it
	for _, e := range top {
		if rel, ok := strings.CutPrefix(e.Name, ti.Name+"/"); ok && flat {
			e.Name = rel
			files = append(files, e)
		} else if e.Name == ti.Name && e.Dir && !flat || !strings.Contains(e.Name, "/") && e.Name != ti.Name && BesideUpload(ti.Name, e.Name, true) {
			continue
		} else {
			beside = append(beside, cmp.Or(e.Where, e.Name)+": unexpected object beside the folder")
		}
	}
	readDir := func(dir string) ([]TreeEntry, error) {
		if flat {
			return files, nil
		}
		es, err := b.ReadTreeDir(ctx, ti, strings.TrimSuffix(ti.Name+"/"+dir, "/"))
		if dir == "" && fault.CodeOf(err) == fault.UploadMissing {
			// The upload's folder itself is gone, and its listing is still there (the upload
			// was not removed meanwhile): the folder was removed by hand. It holds nothing, and
			// each file it lists is named missing, as on a backend that keeps no folders
			// (FlatList), where such a folder is no object to miss.
			if _, _, lerr := b.ReadTreeObject(ctx, ti.ID, TreeListName); lerr != nil {
				return nil, lerr
			}
			return nil, nil
		}
		return es, err
	}
	var extra []TreeFault
	added := func(r, why string) {
		text := manifest.Quote(r) + " was added"
		if why != "" {
			text = manifest.Quote(r+" ("+why+")") + " was added"
		}
		extra = append(extra, TreeFault{Rel: r, What: TreeAdded, Text: text})
	}
	err = walkTree(flat, readDir,
		func(r string, e TreeEntry) bool {
			switch {
			case e.File:
				if !listed[r] {
					added(r, "")
				}
			case e.Dir:
				if e.Why != "" {
					added(r, e.Why)
				}
				if e.Skip != "" {
					added(r, e.Skip)
				}
				return e.Skip == ""
			default:
				added(r, "not a regular file")
			}
			return false
		})
	if err != nil {
		return nil, err
	}
	for _, x := range beside {
		extra = append(extra, TreeFault{What: TreeBeside, Text: x})
	}
	return extra, nil
}
