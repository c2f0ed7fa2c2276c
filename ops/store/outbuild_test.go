package store

import (
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

// outFakeFS is a tree of folders kept in a map by path, for the OutDir of the tests: it records
// what is synced and closed, and fails the operation named in fail.
type outFakeFS struct {
	entries map[string]string // path -> "dir", or a file's bytes
	synced  []string
	closed  []string
	fail    string     // "write", "rename", "place", "chmod": that step fails
	mu      sync.Mutex // of synced and closed: a commit syncs several at once
}

func (fs *outFakeFS) note(list *[]string, path string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	*list = append(*list, path)
	return nil
}

type outFakeDir struct {
	fs   *outFakeFS
	path string
}

type outFakeData struct {
	fs   *outFakeFS
	mode os.FileMode
}

var errOutFake = errors.New("fake failure")

func (d outFakeDir) at(name string) string { return d.path + "/" + name }

func (d outFakeDir) Mkdir(name string) (OutDir, error) {
	if _, ok := d.fs.entries[d.at(name)]; ok {
		return nil, errOutFake
	}
	d.fs.entries[d.at(name)] = "dir"
	return outFakeDir{d.fs, d.at(name)}, nil
}

func (d outFakeDir) Write(name string, data []byte, keep bool) (OutFile, error) {
	if d.fs.fail == "write" {
		return nil, errOutFake
	}
	d.fs.entries[d.at(name)] = string(data)
	if keep {
		return outFakeDir{d.fs, d.at(name)}, nil
	}
	return nil, nil
}

func (d outFakeDir) move(from string, to OutDir, name string) {
	t := to.(outFakeDir)
	for p, v := range d.fs.entries {
		if p == d.at(from) || strings.HasPrefix(p, d.at(from)+"/") {
			delete(d.fs.entries, p)
			d.fs.entries[t.at(name)+strings.TrimPrefix(p, d.at(from))] = v
		}
	}
}

func (d outFakeDir) Rename(from string, to OutDir, name string) error {
	if _, ok := d.fs.entries[d.at(from)]; !ok || d.fs.fail == "rename" {
		return errOutFake
	}
	d.move(from, to, name)
	return nil
}

func (d outFakeDir) Place(from string, to OutDir, name string) error {
	if _, ok := d.fs.entries[to.(outFakeDir).at(name)]; ok || d.fs.fail == "place" {
		return errOutFake
	}
	d.move(from, to, name)
	return nil
}

func (d outFakeDir) Remove(name string) error {
	for p := range d.fs.entries {
		if p == d.at(name) || strings.HasPrefix(p, d.at(name)+"/") {
			delete(d.fs.entries, p)
		}
	}
	return nil
}

func (d outFakeDir) Sync() error  { return d.fs.note(&d.fs.synced, d.path) }
func (d outFakeDir) Close() error { return d.fs.note(&d.fs.closed, d.path) }

func (f *outFakeData) Sync() error {
	return f.fs.note(&f.fs.synced, "data")
}

func (f *outFakeData) Chmod(mode os.FileMode) error {
	if f.fs.fail == "chmod" {
		return errOutFake
	}
	f.mode = mode
	return nil
}

// outPartialFS is an unfinished upload's folder p holding its data, and a store folder s.
func outPartialFS(fail string) (*outFakeFS, outFakeDir, outFakeDir, *outFakeData) {
	fs := &outFakeFS{entries: map[string]string{"p": "dir", "p/data": "bytes", "s": "dir"}, fail: fail}
	return fs, outFakeDir{fs, "p"}, outFakeDir{fs, "s"}, &outFakeData{fs: fs, mode: FileMode}
}

func outKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func wantOutEntries(t *testing.T, fs *outFakeFS, want ...string) {
	t.Helper()
	slices.Sort(want)
	if got := outKeys(fs.entries); !slices.Equal(got, want) {
		t.Fatalf("entries %q, want %q", got, want)
	}
}

var outMeta = &Info{ID: "u1", Name: "c.txt"}

// A build from an unfinished upload holds its files and the data, read-only, under the upload's
// name; placed, it is the store's upload id.
func TestBuildOutPlaced(t *testing.T) {
	fs, p, s, data := outPartialFS("")
	o, err := BuildOut(p, "out", outMeta, true, []OutFileData{{Name: MetaName, Data: []byte("{}\n")}}, &OutPayload{Name: "data", Data: data})
	if err != nil {
		t.Fatal(err)
	}
	wantOutEntries(t, fs, "p", "p/out", "p/out/"+MetaName, "p/out/c.txt", "s")
	if data.mode != ReadOnlyMode {
		t.Fatalf("data mode %04o, want read-only", data.mode)
	}
	if err := o.Sync(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"data", "p/out", "p/out/" + MetaName}; !sameOutSet(fs.synced, want) {
		t.Fatalf("synced %q, want %q", fs.synced, want)
	}
	if !slices.Contains(fs.closed, "p/out/"+MetaName) || slices.Contains(fs.closed, "p/out") {
		t.Fatalf("closed %q: the metadata file closed by Sync, the folder kept for an undo", fs.closed)
	}
	if err := o.Place(s); err != nil {
		t.Fatal(err)
	}
	wantOutEntries(t, fs, "p", "s", "s/u1", "s/u1/"+MetaName, "s/u1/c.txt")
	if !slices.Contains(fs.closed, "p/out") {
		t.Fatalf("closed %q: the folder closed once placed", fs.closed)
	}
}

func sameOutSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// A build from an unfinished upload that fails at any step, or whose place fails, leaves the
// unfinished upload as it was: its data back, writable, no folder built.
func TestBuildOutUndone(t *testing.T) {
	for _, fail := range []string{"write", "chmod", "rename", "place"} {
		t.Run(fail, func(t *testing.T) {
			fs, p, s, data := outPartialFS(fail)
			fs.entries["p/out"] = "dir" // left by a build killed before
			fs.entries["p/out/c.txt"] = "old"
			o, err := BuildOut(p, "out", outMeta, false, []OutFileData{{Name: MetaName, Data: []byte("{}\n")}}, &OutPayload{Name: "data", Data: data})
			if err == nil {
				if err = o.Place(s); err == nil {
					t.Fatal("placed")
				}
			}
			if !errors.Is(err, errOutFake) {
				t.Fatalf("error %v, want the step's", err)
			}
			wantOutEntries(t, fs, "p", "p/data", "s")
			if fs.entries["p/data"] != "bytes" || data.mode != FileMode {
				t.Fatalf("data %q of mode %04o, want its bytes, writable", fs.entries["p/data"], data.mode)
			}
		})
	}
}

// A folder upload's tree is moved in as it is; no data file is made read-only or synced.
func TestBuildOutTree(t *testing.T) {
	fs, p, s, _ := outPartialFS("")
	fs.entries["p/tree"], fs.entries["p/tree/d"], fs.entries["p/tree/d/f"] = "dir", "dir", "x"
	m := &Info{ID: "u2", Name: "d"}
	o, err := BuildOut(p, "out", m, true, nil, &OutPayload{Name: "tree/d"})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Sync(); err != nil || !slices.Equal(fs.synced, []string{"p/out"}) {
		t.Fatalf("sync: %v, synced %q, want the folder only", err, fs.synced)
	}
	if err := o.Undo(errOutFake); err != errOutFake {
		t.Fatalf("undo: %v", err)
	}
	wantOutEntries(t, fs, "p", "p/data", "p/tree", "p/tree/d", "p/tree/d/f", "s")
	o, err = BuildOut(p, "out", m, false, nil, &OutPayload{Name: "tree/d"})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Place(s); err != nil {
		t.Fatal(err)
	}
	wantOutEntries(t, fs, "p", "p/data", "p/tree", "s", "s/u2", "s/u2/d", "s/u2/d/f")
}

// A staged upload's build that fails leaves nothing in the staging area; one built and failed
// by its commit stays there, closed, to go with the staging area; one the batch did not take is
// removed (Unbuild).
func TestBuildOutStaged(t *testing.T) {
	fs := &outFakeFS{entries: map[string]string{"st": "dir"}, fail: "write"}
	st := outFakeDir{fs, "st"}
	m := &Info{ID: "u3", Name: "small"}
	files := []OutFileData{{Name: "small", Data: []byte("hi")}}
	if _, err := BuildOut(st, "u3", m, true, files, nil); !errors.Is(err, errOutFake) {
		t.Fatalf("build: %v", err)
	}
	wantOutEntries(t, fs, "st")
	fs.fail, fs.closed = "", nil
	o, err := BuildOut(st, "u3", m, true, files, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Sync(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"st/u3", "st/u3/small"}; !sameOutSet(fs.synced, want) || !sameOutSet(fs.closed, want) {
		t.Fatalf("synced %q, closed %q, want both of %q", fs.synced, fs.closed, want)
	}
	o.Undo(errOutFake)
	wantOutEntries(t, fs, "st", "st/u3", "st/u3/small")
	o.Unbuild(nil)
	wantOutEntries(t, fs, "st")
	// Where the commit makes everything durable at once, nothing is kept open.
	fs.closed = nil
	if _, err := BuildOut(st, "u4", &Info{ID: "u4", Name: "small"}, false, files, nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fs.closed, []string{"st/u4"}) {
		t.Fatalf("closed %q, want the folder at once", fs.closed)
	}
}

// outFakeStore is the store folder of a CommitOuts test and the steps over it: what was done
// with which upload, in order.
type outFakeStore struct {
	fs     *outFakeFS
	events []string
}

func (st *outFakeStore) commit(flushErr error) OutCommit[*Out] {
	return OutCommit[*Out]{
		Out: func(o *Out) *Out { return o },
		Flush: func() (OutDir, error) {
			st.events = append(st.events, "flush")
			return outFakeDir{st.fs, "s"}, flushErr
		},
		SyncEach: true, SyncWidth: 2,
		Placed: func(d OutDir) error {
			st.events = append(st.events, "placed "+d.(outFakeDir).path)
			return nil
		},
		Done:    func(o *Out) { st.events = append(st.events, "done "+o.ID) },
		Release: func(o *Out) { st.events = append(st.events, "release "+o.ID) },
	}
}

// A commit syncs every upload, flushes, places each (one whose id the store has fails alone,
// taken apart), makes the places durable, then is done with those placed; it releases every
// upload and closes the store's folder at the end.
func TestCommitOuts(t *testing.T) {
	fs, p, _, data := outPartialFS("")
	fs.entries["st"], fs.entries["s/u3"] = "dir", "dir" // u3 is in the store already
	own, err := BuildOut(p, "out", outMeta, true, nil, &OutPayload{Name: "data", Data: data})
	if err != nil {
		t.Fatal(err)
	}
	staged, err := BuildOut(outFakeDir{fs, "st"}, "u3", &Info{ID: "u3", Name: "small"}, true, []OutFileData{{Name: "small", Data: []byte("hi")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := &outFakeStore{fs: fs}
	errs := CommitOuts([]*Out{own, staged}, nil, st.commit(nil))
	if errs[0] != nil || !errors.Is(errs[1], errOutFake) {
		t.Fatalf("errors %v, want u1 placed, u3 refused", errs)
	}
	if want := []string{"flush", "placed s", "done u1", "release u1", "release u3"}; !slices.Equal(st.events, want) {
		t.Fatalf("events %q, want %q", st.events, want)
	}
	if !sameOutSet(fs.synced, []string{"data", "p/out", "st/u3", "st/u3/small"}) {
		t.Fatalf("synced %q", fs.synced)
	}
	if !slices.Contains(fs.closed, "s") {
		t.Fatalf("closed %q: the store's folder not closed", fs.closed)
	}
	wantOutEntries(t, fs, "p", "s", "s/u1", "s/u1/c.txt", "s/u3", "st", "st/u3", "st/u3/small")
}

// A flush that fails fails every upload: each taken apart (an unfinished upload's data back),
// none placed, the folder the flush opened closed.
func TestCommitOutsFlushFails(t *testing.T) {
	fs, p, _, data := outPartialFS("")
	own, err := BuildOut(p, "out", outMeta, false, nil, &OutPayload{Name: "data", Data: data})
	if err != nil {
		t.Fatal(err)
	}
	st := &outFakeStore{fs: fs}
	errs := CommitOuts([]*Out{own}, nil, st.commit(errOutFake))
	if !errors.Is(errs[0], errOutFake) {
		t.Fatalf("error %v, want the flush's", errs[0])
	}
	if want := []string{"flush", "release u1"}; !slices.Equal(st.events, want) {
		t.Fatalf("events %q, want %q", st.events, want)
	}
	if !slices.Contains(fs.closed, "s") || data.mode != FileMode {
		t.Fatalf("closed %q, data mode %04o: want the store's folder closed, the data writable", fs.closed, data.mode)
	}
	wantOutEntries(t, fs, "p", "p/data", "s")
}
