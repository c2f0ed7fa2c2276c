package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// memTrees is the smallest TreeBackend: trees kept in maps. It tests the engine's rules (resume,
// naming a finished tree again, repair, the restart after ErrTreeLost, verify) apart from any
// backend, and shows what a backend gives.
type memTrees struct {
	mu       sync.Mutex
	jobs     int
	next     int
	partial  map[string]*memWrite         // by source path
	finished map[string]map[string][]byte // id -> object name (MetaName, TreeListName, "f/"+rel) -> bytes
	created  map[string]int               // rel -> files written (not kept by a resume)
	lose     int                          // Publish answers ErrTreeLost this many times
	reused   []string
	anyName  bool // StartTree finds a finished tree of the BLAKE3 whatever its name
}

func newMemTrees(jobs int) *memTrees {
	return &memTrees{jobs: jobs, partial: map[string]*memWrite{}, finished: map[string]map[string][]byte{}, created: map[string]int{}}
}

func (m *memTrees) TreeProperties() TreeProperties {
	return TreeProperties{Jobs: m.jobs, VerifyJobs: 2, FlatList: true}
}

func (m *memTrees) TreeHashFirst(context.Context, string, int64) (bool, error) { return true, nil }

func (m *memTrees) StartTree(_ context.Context, st TreeStart) (string, TreeWrite, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, objs := range m.finished {
		var tm TreeMeta
		json.Unmarshal(objs[MetaName], &tm)
		if tm.Blake3 == st.Blake3 && (tm.Name == st.Src.Name || m.anyName) && id != st.Avoid {
			return id, nil, nil
		}
	}
	if w := m.partial[st.Src.Path]; w != nil {
		return "", w, nil
	}
	m.next++
	w := &memWrite{m: m, id: fmt.Sprintf("0190c4d2-0000-7000-8000-%012d", m.next), path: st.Src.Path, files: map[string][]byte{}}
	m.partial[st.Src.Path] = w
	return "", w, nil
}

func (m *memTrees) MarkUsed(_ context.Context, ids []string, _ time.Time) error {
	m.reused = append(m.reused, ids...)
	return nil
}

func (m *memTrees) object(id, name string) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.finished[id][name]
	return b, ok
}

func (m *memTrees) ReadTreeObject(_ context.Context, id, name string) ([]byte, string, error) {
	if b, ok := m.object(id, name); ok {
		return b, id + "/" + name, nil
	}
	return nil, "", fault.Errorf(fault.UploadMissing, "upload %s: not there", id)
}

func (m *memTrees) Info(_ context.Context, id string) (*Info, error) {
	return nil, fault.Errorf(fault.UploadMissing, "upload %s: not there", id)
}

func (m *memTrees) OpenTreeObject(_ context.Context, id, _, rel string) (io.ReadCloser, error) {
	if b, ok := m.object(id, "f/"+rel); ok {
		return io.NopCloser(bytes.NewReader(b)), nil
	}
	return nil, fault.Errorf(fault.UploadMissing, "upload %s: %s not there", id, rel)
}

func (m *memTrees) ReadTreeDir(_ context.Context, ti *TreeInfo, _ string) ([]TreeEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var es []TreeEntry
	for k := range m.finished[ti.ID] {
		if rel, ok := strings.CutPrefix(k, "f/"); ok {
			es = append(es, TreeEntry{Name: ti.Name + "/" + rel, File: true})
		}
	}
	sort.Slice(es, func(i, j int) bool { return es[i].Name < es[j].Name })
	return es, nil
}

type memWrite struct {
	m     *memTrees
	id    string
	path  string
	files map[string][]byte // guarded by m.mu
}

func (w *memWrite) ID() string { return w.id }

func (w *memWrite) Stored(f TreeFile) (io.ReadCloser, error) {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	if b, ok := w.files[f.Rel]; ok && int64(len(b)) == f.Size {
		return io.NopCloser(bytes.NewReader(b)), nil
	}
	return nil, nil
}

func (w *memWrite) Create(_ context.Context, f TreeFile, _ TreeSourceFile, _ bool) (TreeFileWrite, error) {
	return &memFile{w: w, rel: f.Rel}, nil
}

func (w *memWrite) Publish(_ context.Context, tm *TreeMeta, files []TreeFile, listing []byte) error {
	m := w.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lose > 0 {
		m.lose--
		delete(m.partial, w.path)
		return ErrTreeLost
	}
	mb, _ := json.Marshal(tm)
	objs := map[string][]byte{MetaName: mb, TreeListName: listing}
	// Everything the write holds, as a rename of the partial tree publishes it: the engine
	// removed what the folder no longer holds first.
	for rel, b := range w.files {
		objs["f/"+rel] = b
	}
	m.finished[w.id] = objs
	delete(m.partial, w.path)
	return nil
}

func (w *memWrite) ReadDir(context.Context, string) ([]TreeEntry, error) {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	var es []TreeEntry
	for rel, b := range w.files {
		es = append(es, TreeEntry{Name: rel, File: true, Size: int64(len(b))})
	}
	sort.Slice(es, func(i, j int) bool { return es[i].Name < es[j].Name })
	return es, nil
}

func (w *memWrite) Remove(_ context.Context, rels []string) error {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	for _, rel := range rels {
		delete(w.files, rel)
	}
	return nil
}

func (w *memWrite) Close(error) {}

type memFile struct {
	w   *memWrite
	rel string
	buf bytes.Buffer
}

func (f *memFile) Write(b []byte) (int, error) { return f.buf.Write(b) }
func (f *memFile) Abort()                      {}
func (f *memFile) Commit(context.Context, string) error {
	m := f.w.m
	m.mu.Lock()
	defer m.mu.Unlock()
	f.w.files[f.rel] = bytes.Clone(f.buf.Bytes())
	m.created[f.rel]++
	return nil
}

// memSource is a source file in memory.
type memSource struct {
	*bytes.Reader
	name string
}

func (s memSource) Name() string     { return s.name }
func (s memSource) Unchanged() error { return nil }
func (s memSource) Close() error     { return nil }

func memTreeSource(files map[string]string) TreeSource {
	src := TreeSource{Path: "/src/proj", Name: "proj"}
	for rel, data := range files {
		src.Files = append(src.Files, TreeFile{Rel: rel, Path: "/src/proj/" + rel, Size: int64(len(data))})
	}
	sort.Slice(src.Files, func(i, j int) bool { return src.Files[i].Rel < src.Files[j].Rel })
	src.Open = func(f TreeFile) (TreeSourceFile, error) {
		return memSource{bytes.NewReader([]byte(files[f.Rel])), f.Path}, nil
	}
	return src
}

// TestTreeEngine: an upload, one file at a time and several at once; the same tree again named
// again; a resume keeping what was stored whole and rewriting what was not; a restart after
// ErrTreeLost; a damaged tree avoided (a new id) and verify naming what changed.
func TestTreeEngine(t *testing.T) {
	ctx := context.Background()
	files := map[string]string{"a/1.txt": "one", "a/b/2.txt": "two two", "c.txt": strings.Repeat("x", 300<<10)}
	for _, jobs := range []int{1, 4} {
		t.Run(fmt.Sprint("jobs", jobs), func(t *testing.T) {
			m := newMemTrees(jobs)
			var got int64
			ti, err := UploadTree(ctx, m, memTreeSource(files), TreeOptions{Progress: func(n int64) { got += n }})
			if err != nil || len(ti.Files) != 3 || ti.Size != got {
				t.Fatalf("upload: %+v, %v (progress %d)", ti, err, got)
			}
			if _, err := VerifyTreeOf(ctx, m, ti.ID, nil); err != nil {
				t.Fatal(err)
			}
			again, err := UploadTree(ctx, m, memTreeSource(files), TreeOptions{})
			if err != nil || again.ID != ti.ID || len(m.reused) != 1 {
				t.Fatalf("the same tree again: %+v, %v; reused %v", again, err, m.reused)
			}

			// A finished tree of the same BLAKE3 and another name is not this folder's.
			m.anyName = true
			src := memTreeSource(files)
			src.Name, src.Path = "renamed", "/src/renamed"
			ren, err := UploadTree(ctx, m, src, TreeOptions{})
			if err != nil || ren.ID == ti.ID || ren.Name != "renamed" {
				t.Fatalf("the same tree under another name: %+v, %v; want a new upload named renamed", ren, err)
			}
			m.anyName = false
			delete(m.finished, ren.ID)

			// A damaged tree is not named again: verify names the file, a new upload repairs it.
			m.finished[ti.ID]["f/a/1.txt"] = []byte("ONE")
			m.finished[ti.ID]["f/extra"] = []byte("?")
			_, err = VerifyTreeOf(ctx, m, ti.ID, nil)
			if fault.CodeOf(err) != fault.VerifyMismatch || !strings.Contains(err.Error(), "a/1.txt changed") || !strings.Contains(err.Error(), "extra was added") {
				t.Fatalf("verify of a damaged tree: %v", err)
			}
			fixed, err := UploadTree(ctx, m, memTreeSource(files), TreeOptions{})
			if err != nil || fixed.ID == ti.ID || fixed.Blake3 != ti.Blake3 {
				t.Fatalf("repair: %+v, %v", fixed, err)
			}

			// A resume keeps the files stored whole and equal, and rewrites the rest.
			other := map[string]string{"x": "kept", "y": "stale!"}
			src = memTreeSource(other)
			src.Path = "/src/other"
			w := &memWrite{m: m, id: "0190c4d2-0000-7000-8000-999999999999", path: src.Path,
				files: map[string][]byte{"x": []byte("kept"), "y": []byte("STALE!")}}
			m.partial[src.Path] = w
			m.lose = 1 // and the first publish finds the upload taken by another run
			got = 0
			ti2, err := UploadTree(ctx, m, src, TreeOptions{Progress: func(n int64) { got += n }})
			if err != nil || ti2.Size != got || m.created["x"] != 1 || m.created["y"] != 2 {
				t.Fatalf("resume: %+v, %v; progress %d; written %v", ti2, err, got, m.created)
			}
			if b, _ := m.object(ti2.ID, "f/y"); string(b) != "stale!" {
				t.Fatalf("y after the resume: %q", b)
			}

			// A resume of a folder that lost files since: what the run before stored and the
			// folder no longer holds is no part of the finished tree.
			src = memTreeSource(map[string]string{"x": "kept"})
			src.Path = "/src/shrunk"
			m.partial[src.Path] = &memWrite{m: m, id: "0190c4d2-0000-7000-8000-999999999998", path: src.Path,
				files: map[string][]byte{"x": []byte("kept"), "gone": []byte("?"), "old/z": []byte("z")}}
			ti3, err := UploadTree(ctx, m, src, TreeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := VerifyTreeOf(ctx, m, ti3.ID, nil); err != nil {
				t.Fatalf("verify of a tree resumed after its folder lost files: %v", err)
			}
		})
	}
}

// TestResumes: the unfinished upload a run takes up is one begun for the same kind of source (a
// folder's; a file's by a stream, never a step-by-step one) under the same name; from the same
// path where a lock keeps one run at a time (its bytes changed since or not), of the same BLAKE3
// from any path where runs share an upload by the bytes they send.
func TestResumes(t *testing.T) {
	tree := TreeStart{Src: &TreeSource{Path: "/src/proj", Name: "proj"}, Blake3: "b1"}.Of()
	file := PartialOf{Name: "x.bin", Path: "/src/x.bin", Blake3: "f1", Streamed: true}
	for _, c := range []struct {
		why       string
		p, run    PartialOf
		sameBytes bool
		want      bool
	}{
		{"the same folder", tree, tree, false, true},
		{"the same folder, by its bytes", tree, tree, true, true},
		{"a file upload for a folder", PartialOf{Name: "proj", Path: "/src/proj", Blake3: "b1", Streamed: true}, tree, false, false},
		{"another name", PartialOf{Folder: true, Name: "other", Path: "/src/proj", Blake3: "b1"}, tree, false, false},
		{"another folder", PartialOf{Folder: true, Name: "proj", Path: "/src2/proj", Blake3: "b1"}, tree, false, false},
		{"a copy of the folder elsewhere, by its bytes", PartialOf{Folder: true, Name: "proj", Path: "/src2/proj", Blake3: "b1"}, tree, true, true},
		{"changed since, resumed by what is equal", PartialOf{Folder: true, Name: "proj", Path: "/src/proj", Blake3: "b0"}, tree, false, true},
		{"changed since, runs sharing by bytes", PartialOf{Folder: true, Name: "proj", Path: "/src/proj", Blake3: "b0"}, tree, true, false},
		{"the same file", file, file, false, true},
		{"the same file, by its bytes", file, file, true, true},
		{"a copy of the file elsewhere, by its bytes", PartialOf{Name: "x.bin", Path: "/b/x.bin", Blake3: "f1", Streamed: true}, file, true, true},
		{"a copy of the file elsewhere, by its path", PartialOf{Name: "x.bin", Path: "/b/x.bin", Blake3: "f1", Streamed: true}, file, false, false},
		{"the file changed since, by its path", PartialOf{Name: "x.bin", Path: "/src/x.bin", Blake3: "f0", Streamed: true}, file, false, true},
		{"the file changed since, by its bytes", PartialOf{Name: "x.bin", Path: "/src/x.bin", Blake3: "f0", Streamed: true}, file, true, false},
		{"the file under another name", PartialOf{Name: "y.bin", Path: "/src/x.bin", Blake3: "f1", Streamed: true}, file, false, false},
		{"a step-by-step upload", PartialOf{Name: "x.bin", Path: "/src/x.bin", Blake3: "f1"}, file, false, false},
		{"a step-by-step upload, by its bytes", PartialOf{Name: "x.bin", Blake3: "f1"}, file, true, false},
		{"a folder upload for a file", PartialOf{Name: "x.bin", Path: "/src/x.bin", Blake3: "f1", Folder: true}, file, true, false},
	} {
		if got := Resumes(c.p, c.run, c.sameBytes); got != c.want {
			t.Errorf("%s: Resumes %v, want %v", c.why, got, c.want)
		}
	}
}

// TestTreeObjectMax: a listing or metadata longer than TreeObjectMax is never published, and
// one found longer is damaged: what one backend writes, every backend reads whole.
func TestTreeObjectMax(t *testing.T) {
	ctx := context.Background()
	long := strings.Repeat("x", 200) // a listing longer than the metadata
	files := map[string]string{long + "a": "1", long + "b": "2", long + "c": "3"}
	m := newMemTrees(1)
	ti, err := UploadTree(ctx, m, memTreeSource(files), TreeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	listing, _ := m.object(ti.ID, TreeListName)
	meta, _ := m.object(ti.ID, MetaName)
	defer func(max int) { TreeObjectMax = max }(TreeObjectMax)

	TreeObjectMax = len(listing) - 1
	if _, err := TreeInfoOf(ctx, m, ti.ID); fault.CodeOf(err) != fault.UploadUnreadable || !strings.Contains(err.Error(), TreeListName) {
		t.Errorf("a listing over the most: %v, want upload.unreadable naming it", err)
	}
	src := memTreeSource(map[string]string{long + "a": "1", long + "b": "2", long + "d": "4"})
	src.Path = "/src/other"
	if _, err := UploadTree(ctx, m, src, TreeOptions{}); fault.CodeOf(err) != fault.UploadInvalid {
		t.Errorf("an upload whose listing is over the most: %v, want upload.invalid", err)
	}
	if len(m.finished) != 1 {
		t.Errorf("%d finished uploads, want the first alone", len(m.finished))
	}

	TreeObjectMax = len(meta) - 1
	if _, err := TreeInfoOf(ctx, m, ti.ID); fault.CodeOf(err) != fault.UploadUnreadable || !strings.Contains(err.Error(), MetaName) {
		t.Errorf("metadata over the most: %v, want upload.unreadable naming it", err)
	}
	TreeObjectMax = max(len(meta), len(listing))
	if _, err := TreeInfoOf(ctx, m, ti.ID); err != nil {
		t.Errorf("at the most: %v", err)
	}
}
