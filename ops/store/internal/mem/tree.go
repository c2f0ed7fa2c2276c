package mem

import (
	"bytes"
	"context"
	"io"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// The in-memory store's folder uploads are the rules of package store (store.UploadTree,
// TreeInfoOf, OpenTree, VerifyTreeOf) over the primitives below, as the local and S3 stores'
// are: what is its own is only where the bytes are kept (maps) and how a source's note names
// its upload.

// trees is the store as a store.TreeBackend, for one call.
type trees struct{ s *Store }

var _ store.TreeBackend = (*trees)(nil)

func (t *trees) TreeProperties() store.TreeProperties {
	return store.TreeProperties{Jobs: 2, VerifyJobs: 2, FlatList: true}
}

// TreeHashFirst makes the store: the source's note is keyed on the tree's BLAKE3, as a file's is.
func (t *trees) TreeHashFirst(context.Context, string, int64) (bool, error) {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	return true, t.s.checkStore(true)
}

// StartTree finds a finished upload of the tree's BLAKE3 and name (unless it is st.Avoid), else
// takes up the unfinished one the source's note names that no writer holds, or begins a new one
// admitted against the limits.
func (t *trees) StartTree(ctx context.Context, st store.TreeStart) (string, store.TreeWrite, error) {
	s := t.s
	note := noteKey("folder", st.Src.Name, st.Blake3)
	found, id, p, err := s.byNote(note, st.Blake3, st.Src.Name, st.Avoid, true)
	if err != nil || found != "" {
		return found, nil, err
	}
	if p != nil {
		return "", &treeWrite{s: s, id: id, p: p}, nil
	}
	id, p, release, err := s.beginStaged(ctx, note, st.Src.Name, st.Size, true)
	if err != nil {
		return "", nil, err
	}
	return "", &treeWrite{s: s, id: id, p: p, release: release}, nil
}

func (t *trees) Info(ctx context.Context, id string) (*store.Info, error) { return t.s.Info(ctx, id) }

func (t *trees) MarkUsed(ctx context.Context, ids []string, at time.Time) error {
	return t.s.MarkUsed(ctx, ids, at)
}

// ReadTreeObject gives the metadata or listing a finished folder upload keeps (a file upload
// keeps none here: the engine then asks Info).
func (t *trees) ReadTreeObject(_ context.Context, id, name string) ([]byte, string, error) {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkStore(false); err != nil {
		return nil, "", err
	}
	f := s.finished[id]
	if f == nil {
		return nil, "", s.missing(id)
	}
	where := s.loc + "/" + id + "/" + name
	switch {
	case name == store.MetaName && f.folder():
		return f.meta, where, nil
	case name == store.TreeListName && f.folder():
		return f.listing, where, nil
	}
	return nil, "", s.missing(id)
}

// treeFiles is the finished folder upload id's files as stored now (nil: no such upload).
func (s *Store) treeFiles(id, name string) map[string][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.finished[id]
	if f == nil || !f.folder() || name != "" && f.info.Name != name {
		return nil
	}
	return f.files
}

func (t *trees) OpenTreeObject(_ context.Context, id, name, rel string) (io.ReadCloser, error) {
	s := t.s
	s.mu.Lock()
	err := s.checkStore(false)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	data, ok := s.treeFiles(id, name)[rel]
	if !ok {
		return nil, s.missing(id)
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

// ReadTreeDir lists every file of the upload at once (FlatList), by its path from the upload's
// own folder.
func (t *trees) ReadTreeDir(_ context.Context, ti *store.TreeInfo, _ string) ([]store.TreeEntry, error) {
	es := store.FlatEntries(t.s.treeFiles(ti.ID, ""), byteSize)
	for i := range es {
		es[i].Name = ti.Name + "/" + es[i].Name
	}
	return es, nil
}

func byteSize(b []byte) int64 { return int64(len(b)) }

// treeWrite is an unfinished folder upload this run holds.
type treeWrite struct {
	s       *Store
	id      string
	p       *partial
	release func() // drops the reservation of an upload this run began (nil: resumed)
	closed  bool
}

func (w *treeWrite) ID() string { return w.id }

// Stored is the copy of f a run before left.
func (w *treeWrite) Stored(f store.TreeFile) (io.ReadCloser, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return io.NopCloser(bytes.NewReader(w.p.files[f.Rel])), nil
}

func (w *treeWrite) Create(_ context.Context, f store.TreeFile, _ store.TreeSourceFile, _ bool) (store.TreeFileWrite, error) {
	return &fileWrite{w: w, rel: f.Rel}, nil
}

// ReadDir gives every file a run before left (FlatList).
func (w *treeWrite) ReadDir(context.Context, string) ([]store.TreeEntry, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return store.FlatEntries(w.p.files, byteSize), nil
}

// Remove drops the files rels.
func (w *treeWrite) Remove(_ context.Context, rels []string) error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	for _, rel := range rels {
		delete(w.p.files, rel)
	}
	return nil
}

// Publish makes the upload finished with every file it holds (the engine removed those the
// folder no longer has).
func (w *treeWrite) Publish(_ context.Context, m *store.TreeMeta, files []store.TreeFile, listing []byte) error {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.partials[w.id] != w.p {
		return s.missing(w.id)
	}
	m.Made = s.now()
	s.finished[w.id] = &finished{info: m.Info, tree: append([]store.TreeFile{}, files...), files: w.p.files, meta: m.Encode(), listing: listing}
	s.idx.Add(&m.Info)
	delete(s.partials, w.id)
	s.quota.R.DropReservation(context.Background(), w.id)
	return nil
}

// Close lets the upload go. One this run began that failed with a coded error drops its
// reservation (an interrupted one keeps it, as its partial is kept for a resume), and one whose
// bytes are not what the record names keeps nothing.
func (w *treeWrite) Close(err error) {
	if w.closed {
		return
	}
	w.closed = true
	w.s.unhold(w.p)
	if w.release != nil && err != nil && fault.CodeOf(err) != "" {
		w.release()
		if fault.CodeOf(err) == fault.UploadHashMismatch {
			w.s.mu.Lock()
			w.s.drop(w.id, w.p)
			w.s.mu.Unlock()
		}
	}
}

// fileWrite is one file of the folder, kept when committed.
type fileWrite struct {
	w   *treeWrite
	rel string
	buf bytes.Buffer
}

func (f *fileWrite) Write(b []byte) (int, error) { return f.buf.Write(b) }
func (f *fileWrite) Abort()                      {}

func (f *fileWrite) Commit(context.Context, string) error {
	s := f.w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	f.w.p.files[f.rel] = bytes.Clone(f.buf.Bytes())
	f.w.p.written = s.now()
	return nil
}
