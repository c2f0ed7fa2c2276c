package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"testing"
)

// mapDirs is FileDirs in maps: files by path with their mode, folders by path ("." the top),
// and a log of what was done to them.
type mapDirs struct {
	files map[string]*mapFile
	dirs  map[string]bool
	other map[string]bool // folders on another file system
	log   []string
}

type mapFile struct {
	perm uint32
	buf  bytes.Buffer
}

func newMapDirs() *mapDirs {
	return &mapDirs{files: map[string]*mapFile{}, dirs: map[string]bool{".": true}, other: map[string]bool{}}
}

func (m *mapDirs) OpenDir(rel string, create bool) (FileDir, error) {
	rel = path.Clean("./" + rel)
	m.log = append(m.log, fmt.Sprintf("open %s %v", rel, create))
	if !m.dirs[rel] {
		if !create {
			return nil, errors.New(rel + ": no such folder")
		}
		for d := rel; d != "."; d = path.Dir(d) {
			m.dirs[d] = true
		}
	}
	return mapDir{m, rel}, nil
}

type mapDir struct {
	m   *mapDirs
	dir string
}

func (d mapDir) at(name string) string { return path.Join(d.dir, name) }

func (d mapDir) Names() ([]string, error) {
	var names []string
	for p := range d.m.files {
		if path.Dir(p) == d.dir {
			names = append(names, path.Base(p))
		}
	}
	for p := range d.m.dirs {
		if p != "." && path.Dir(p) == d.dir {
			names = append(names, path.Base(p))
		}
	}
	slices.Sort(names)
	return names, nil
}

func (d mapDir) Stat(name string) (FileStat, error) {
	if f, ok := d.m.files[d.at(name)]; ok {
		return FileStat{Name: name, Perm: f.perm, Own: true, Links: 1, Size: int64(f.buf.Len())}, nil
	}
	if d.m.dirs[d.at(name)] {
		return FileStat{Name: name, Type: fs.ModeDir, Perm: 0o700, Own: true}, nil
	}
	return FileStat{}, errors.New(d.at(name) + ": missing")
}

func (d mapDir) Elsewhere(name string) (bool, error) { return d.m.other[d.at(name)], nil }

func (d mapDir) Open(name string) (io.ReadCloser, FileStat, error) {
	f, ok := d.m.files[d.at(name)]
	if !ok {
		return nil, FileStat{}, errors.New("missing")
	}
	return io.NopCloser(bytes.NewReader(f.buf.Bytes())), FileStat{Name: name, Perm: f.perm, Own: true, Links: 1}, nil
}

func (d mapDir) Create(name string) (TreeFileWrite, error) {
	if _, ok := d.m.files[d.at(name)]; ok {
		return nil, errors.New(d.at(name) + ": exists") // made create-only, as O_EXCL
	}
	f := &mapFile{perm: uint32(ReadOnlyMode)}
	d.m.files[d.at(name)] = f
	d.m.log = append(d.m.log, "create "+d.at(name))
	return mapFileWrite{f}, nil
}

func (d mapDir) Remove(name string) error {
	d.m.log = append(d.m.log, "remove "+d.at(name))
	for p := range d.m.files {
		if p == d.at(name) || strings.HasPrefix(p, d.at(name)+"/") {
			delete(d.m.files, p)
		}
	}
	for p := range d.m.dirs {
		if p == d.at(name) || strings.HasPrefix(p, d.at(name)+"/") {
			delete(d.m.dirs, p)
		}
	}
	return nil
}

func (d mapDir) Sync() error { d.m.log = append(d.m.log, "sync "+d.dir); return nil }
func (d mapDir) Close()      {}

type mapFileWrite struct{ f *mapFile }

func (w mapFileWrite) Write(b []byte) (int, error)          { return w.f.buf.Write(b) }
func (w mapFileWrite) Commit(context.Context, string) error { return nil }
func (w mapFileWrite) Abort()                               {}

// TestFileTreeWrite: a tree kept as files is written one folder at a time, each folder opened
// (made) once for the files that come in the order of their paths; a killed run's copy is kept
// only when read-only as the store makes its files, and is removed before it is made again; the
// upload is touched every 256 files; the folders are synced each once.
func TestFileTreeWrite(t *testing.T) {
	m := newMapDirs()
	touched := 0
	w := &FileTreeWrite{Dirs: m, Touch: func() { touched++ }}
	ctx := context.Background()
	put := func(rel string, there bool) {
		t.Helper()
		fw, err := w.Create(ctx, TreeFile{Rel: rel}, nil, there)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write([]byte(rel))
	}
	for _, rel := range []string{"a/b/1", "a/b/2", "a/3", "c"} {
		put(rel, false)
	}
	want := []string{"open a/b true", "create a/b/1", "create a/b/2", "open a true", "create a/3", "open . true", "create c"}
	if !slices.Equal(m.log, want) {
		t.Fatalf("did %q, want %q", m.log, want)
	}

	m.files["c"].perm = 0o600 // not as the store makes its files: written again
	if r, err := w.Stored(TreeFile{Rel: "c"}); r != nil || err != nil {
		t.Fatalf("Stored kept a copy of mode 0600: %v, %v", r, err)
	}
	r, err := w.Stored(TreeFile{Rel: "a/3"})
	if err != nil || r == nil {
		t.Fatalf("Stored of the read-only copy: %v, %v", r, err)
	}
	if b, _ := io.ReadAll(r); string(b) != "a/3" {
		t.Fatalf("Stored reads %q", b)
	}
	m.log = nil
	put("c", true)
	if want := []string{"open . true", "remove c", "create c"}; !slices.Equal(m.log, want) {
		t.Fatalf("a file written again: did %q, want %q", m.log, want)
	}

	m.log = nil
	if err := w.SyncDirs([]TreeFile{{Rel: "a/b/1"}, {Rel: "a/b/2"}, {Rel: "a/3"}, {Rel: "c"}}); err != nil {
		t.Fatal(err)
	}
	var synced []string
	for _, l := range m.log {
		if d, ok := strings.CutPrefix(l, "sync "); ok {
			synced = append(synced, d)
		}
	}
	if want := []string{"a/b", "a", "."}; !slices.Equal(synced, want) {
		t.Fatalf("synced %q, want %q", synced, want)
	}

	if err := w.Remove(ctx, []string{"a/b", "c"}); err != nil {
		t.Fatal(err)
	}
	if m.dirs["a/b"] || m.files["a/b/1"] != nil || m.files["c"] != nil || m.files["a/3"] == nil {
		t.Fatalf("after Remove of a/b and c: folders %v, files %v", m.dirs, m.files)
	}

	w.CloseDir()
	touched = 0
	for i := range 600 {
		put(fmt.Sprintf("many/%03d", i), false)
	}
	if touched != 2 {
		t.Fatalf("touched %d times for 600 files, want 2 (every 256)", touched)
	}
}

// TestListFileDir: a folder of a tree kept as files lists its files with their sizes and its
// folders, a folder not the user's of mode 0700 named why, and one on another file system not
// entered.
func TestListFileDir(t *testing.T) {
	m := newMapDirs()
	m.dirs["d"], m.dirs["d/mnt"], m.dirs["d/sub"] = true, true, true
	m.files["d/f"] = &mapFile{perm: 0o400}
	m.files["d/f"].buf.WriteString("12345")
	m.other["d/mnt"] = true
	es, err := ListFileDir(m, "d")
	if err != nil {
		t.Fatal(err)
	}
	want := []TreeEntry{{Name: "f", File: true, Size: 5}, {Name: "mnt", Dir: true, Skip: "another file system mounted there; not entered"}, {Name: "sub", Dir: true}}
	if !slices.Equal(es, want) {
		t.Fatalf("listed %+v, want %+v", es, want)
	}
	if _, err := ListFileDir(m, "gone"); err == nil {
		t.Fatal("listed a folder that is not there")
	}
}

// closedDirs is mapDirs whose folder closed cannot be opened, as one closed even to the user.
type closedDirs struct {
	*mapDirs
	closed string
}

func (c closedDirs) OpenDir(rel string, create bool) (FileDir, error) {
	if rel == c.closed {
		return nil, errors.New(rel + ": permission denied")
	}
	return c.mapDirs.OpenDir(rel, create)
}

// TestReadFileFolder: an upload's folder is read as its own stat, then each entry's in the order
// of their names; one that cannot be opened still has its own stat read (before the open), so
// that a check names its mode rather than only the failed open.
func TestReadFileFolder(t *testing.T) {
	m := newMapDirs()
	m.dirs["u1"] = true
	m.files["u1/b"] = &mapFile{perm: 0o400}
	m.files["u1/a"] = &mapFile{perm: 0o600}
	sts, err := ReadFileFolder(m, "u1")
	var names []string
	for _, st := range sts {
		names = append(names, st.Name)
	}
	if err != nil || !slices.Equal(names, []string{"", "a", "b"}) || sts[0].Type != fs.ModeDir || sts[1].Perm != 0o600 {
		t.Fatalf("read %+v, %v", sts, err)
	}
	d, err := m.OpenDir("u1", false)
	if err != nil {
		t.Fatal(err)
	}
	opened, err := StatFileFolder(d)
	d.Close()
	if err != nil || !slices.Equal(opened, sts) {
		t.Fatalf("the folder read open: %+v, %v; want %+v", opened, err, sts)
	}
	sts, err = ReadFileFolder(closedDirs{m, "u1"}, "u1")
	if err == nil || len(sts) != 1 || sts[0].Name != "" || sts[0].Type != fs.ModeDir {
		t.Fatalf("a folder that cannot be opened: read %+v, %v", sts, err)
	}
}
