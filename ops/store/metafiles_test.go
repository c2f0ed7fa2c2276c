package store

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
)

func metaOf(id, name string) *Info {
	return &Info{ID: id, Name: name, Size: 3, Blake3: strings.Repeat("ab", 32)}
}

// A metadata file's name carries its batch; a name that is not <upload id>.<n> is no metadata
// file's.
func TestMetaFileBatch(t *testing.T) {
	bid := newTestID(t)
	for _, c := range []struct{ name, want string }{
		{MetaFileName(bid, 7), bid},
		{bid, ""},                // no commit number
		{"notanid.1", ""},        // no batch id
		{"../" + bid + ".1", ""}, // a path
		{strings.ToUpper(bid) + ".1", ""},
	} {
		if got := MetaFileBatch(c.name); got != c.want {
			t.Errorf("MetaFileBatch(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

// One Info a line, blank lines skipped; any line that is not an upload's metadata damages the
// whole file, so that no upload is named by half a file.
func TestDecodeMetaFile(t *testing.T) {
	a, b := metaOf(newTestID(t), "a.txt"), metaOf(newTestID(t), "b.txt")
	good := append(EncodeMetaLine(a), EncodeMetaLine(b)...)
	ms, err := DecodeMetaFile(append(append([]byte("\n"), good...), " \n"...))
	if err != nil || len(ms) != 2 || *ms[0] != *a || *ms[1] != *b {
		t.Fatalf("decoded %v %v, want %v %v", ms, err, a, b)
	}
	for name, line := range map[string]string{
		"not JSON":        `{"id":`,
		"no upload id":    `{"id":"x","name":"c.txt","size":1,"blake3":"` + strings.Repeat("ab", 32) + `"}`,
		"no BLAKE3":       `{"id":"` + newTestID(t) + `","name":"c.txt","size":1}`,
		"a negative size": `{"id":"` + newTestID(t) + `","name":"c.txt","size":-1,"blake3":"` + strings.Repeat("ab", 32) + `"}`,
		"a path as name":  `{"id":"` + newTestID(t) + `","name":"../c.txt","size":1,"blake3":"` + strings.Repeat("ab", 32) + `"}`,
	} {
		if ms, err := DecodeMetaFile(append(append([]byte{}, good...), line+"\n"...)); err == nil {
			t.Errorf("%s: decoded %d uploads, want the file damaged", name, len(ms))
		}
	}
}

// metaDir is a folder of metadata files as a backend lists it.
type metaDir struct {
	files  map[string][]byte
	bad    map[string]bool // Read fails (not the store's own)
	reads  map[string]int
	lists  int
	absent bool
}

func (d *metaDir) list() (MetaFolder, func(), bool) {
	d.lists++
	if d.absent {
		return MetaFolder{}, nil, false
	}
	return d.folder(nil), func() {}, true
}

func (d *metaDir) folder(remove func(string)) MetaFolder {
	f := MetaFolder{Remove: remove}
	for name := range d.files {
		f.Names = append(f.Names, name)
	}
	slices.Sort(f.Names)
	f.Read = func(name string) ([]byte, error) {
		if d.reads == nil {
			d.reads = map[string]int{}
		}
		d.reads[name]++
		if d.bad[name] {
			return nil, errors.New("refused")
		}
		return d.files[name], nil
	}
	return f
}

func metaFile(ms ...*Info) []byte {
	var b []byte
	for _, m := range ms {
		b = append(b, EncodeMetaLine(m)...)
	}
	return b
}

// What the files name is found; an id two files name is damaged; a file that cannot be read, or
// is damaged, names nothing until it is read whole on a later miss; a file is read once, and a
// hit lists nothing.
func TestMetaIndex(t *testing.T) {
	b1, b2 := newTestID(t), newTestID(t)
	a, b, c := metaOf(newTestID(t), "a"), metaOf(newTestID(t), "b"), metaOf(newTestID(t), "c")
	d := &metaDir{absent: true}
	var x MetaIndex
	if _, ok := x.Lookup(a.ID, d.list); ok {
		t.Fatal("found in no folder")
	}
	d.absent = false
	d.files = map[string][]byte{
		MetaFileName(b1, 1): metaFile(a, b),
		MetaFileName(b1, 2): metaFile(b),                             // b: named twice
		MetaFileName(b2, 1): append(metaFile(c), "damaged\n"...),     // c: in a damaged file
		"stray":             metaFile(metaOf(newTestID(t), "stray")), // no metadata file's name
	}
	if m, ok := x.Lookup(a.ID, d.list); !ok || *m != *a {
		t.Fatalf("a: %v %v", m, ok)
	}
	if m, ok := x.Lookup(b.ID, d.list); !ok || m != nil {
		t.Fatalf("b, named by two files: %v %v, want damaged", m, ok)
	}
	if _, ok := x.Lookup(newTestID(t), d.list); ok {
		t.Fatal("found an id no file names")
	}
	if d.lists != 3 || d.reads[MetaFileName(b1, 1)] != 1 || d.reads["stray"] != 0 {
		t.Fatalf("%d listings, reads %v: a hit lists nothing, a file read is not read again", d.lists, d.reads)
	}
	if m, ok := x.Lookup(a.ID, d.list); !ok || m == nil {
		t.Fatalf("a after a miss: %v %v (its file read again would name it twice)", m, ok)
	}
	if _, ok := x.Lookup(c.ID, d.list); ok {
		t.Fatal("c found in a damaged file")
	}
	d.files[MetaFileName(b2, 1)] = metaFile(c)
	if m, ok := x.Lookup(c.ID, d.list); !ok || *m != *c {
		t.Fatalf("c, its file whole now: %v %v", m, ok)
	}
	d.bad = map[string]bool{MetaFileName(b2, 2): true}
	e := metaOf(newTestID(t), "e")
	d.files[MetaFileName(b2, 2)] = metaFile(e)
	if _, ok := x.Lookup(e.ID, d.list); ok {
		t.Fatal("e found in a file that cannot be read")
	}
	d.bad = nil
	if _, ok := x.Lookup(e.ID, d.list); !ok {
		t.Fatal("e not found once its file can be read")
	}
}

// The sweep removes a file only when its batch has ended and it names no upload in the store;
// a file it cannot read, and every file when a listing fails, is kept. The metadata folder is
// listed first, then the partials, then the store (the order a batch makes them in).
func TestPruneMetaFiles(t *testing.T) {
	ended, running := newTestID(t), newTestID(t)
	kept, gone := metaOf(newTestID(t), "kept"), metaOf(newTestID(t), "gone")
	files := map[string][]byte{
		MetaFileName(ended, 1):   metaFile(gone),       // removed
		MetaFileName(ended, 2):   metaFile(gone, kept), // names an upload still there
		MetaFileName(ended, 3):   metaFile(gone),       // cannot be read
		MetaFileName(running, 1): metaFile(gone),       // its batch runs
		"stray":                  metaFile(gone),       // not a metadata file's name
	}
	bad := map[string]bool{MetaFileName(ended, 3): true}
	var order []string
	partials := func() ([]string, error) { order = append(order, "partials"); return []string{running}, nil }
	uploads := func() ([]string, error) { order = append(order, "uploads"); return []string{kept.ID}, nil }
	var removed []string
	remove := func(name string) { removed = append(removed, name) }
	d := &metaDir{files: files, bad: bad}
	PruneMetaFiles(d.folder(remove), partials, uploads)
	if want := []string{MetaFileName(ended, 1)}; !slices.Equal(removed, want) {
		t.Fatalf("removed %v, want %v", removed, want)
	}
	if !slices.Equal(order, []string{"partials", "uploads"}) {
		t.Fatalf("listed %v, want the partials, then the uploads", order)
	}
	fail := func() ([]string, error) { return nil, errors.New("cannot list") }
	for name, lists := range map[string][2]func() ([]string, error){
		"partials": {fail, uploads},
		"uploads":  {partials, fail},
	} {
		removed = nil
		PruneMetaFiles(d.folder(remove), lists[0], lists[1])
		if len(removed) != 0 {
			t.Errorf("the %s cannot be listed: removed %v, want none", name, removed)
		}
	}
	order = nil
	PruneMetaFiles(MetaFolder{Remove: remove}, partials, uploads)
	if len(order) != 0 {
		t.Fatalf("an empty folder listed %v", order)
	}
}

// An upload with no metadata file of its own: found when one file names it, no finished upload
// when none does, damaged when two do.
func TestMetaIndexFind(t *testing.T) {
	bid := newTestID(t)
	a, b := metaOf(newTestID(t), "a"), metaOf(newTestID(t), "b")
	d := &metaDir{files: map[string][]byte{MetaFileName(bid, 1): metaFile(a, b), MetaFileName(bid, 2): metaFile(b)}}
	var x MetaIndex
	for _, c := range []struct {
		id   string
		code fault.Code
	}{{a.ID, ""}, {b.ID, fault.UploadUnreadable}, {newTestID(t), fault.UploadMissing}} {
		m, err := x.Find(c.id, "STORE/"+c.id, ".upload.json", "STORE/.attachctl/meta", d.list)
		if fault.CodeOf(err) != c.code || (err == nil) != (m != nil && m.ID == c.id) {
			t.Errorf("%s: %v %v, want code %q", c.id, m, err, c.code)
		}
	}
}

// memMetaFile is a metadata file being written that takes at most room bytes, as a disk that
// fills would, and can fail its close.
type memMetaFile struct {
	b        []byte
	room     int
	closed   bool
	closeErr error
}

func (f *memMetaFile) WriteAt(b []byte, off int64) (int, error) {
	f.b = f.b[:off]
	n := min(len(b), f.room-len(f.b))
	f.b = append(f.b, b[:n]...)
	if n < len(b) {
		return n, errors.New("no space left on device")
	}
	return n, nil
}

func (f *memMetaFile) Truncate(size int64) error { f.b = f.b[:size]; return nil }
func (f *memMetaFile) Sync() error               { return nil }
func (f *memMetaFile) Close() error              { f.closed = true; return f.closeErr }

// A commit's metadata file is made at the first staged upload of the commit, named by its batch
// and its number in the batch; a line that does not fit is not kept, not even in part, with the
// backend's code; a file a failure leaves empty is closed and not the commit's; one whose seal
// fails is removed.
func TestStagedMetaJoin(t *testing.T) {
	bid := newTestID(t)
	var made []*memMetaFile
	var names []string
	removed := 0
	room := 0
	create := func(name string) (MetaFileWrite, error) {
		f := &memMetaFile{room: room}
		made, names = append(made, f), append(names, name)
		return MetaFileWrite{File: f, Path: "p/" + name,
			Code: func(path string, err error) error {
				return fault.Errorf(fault.UploadDiskFull, "%s: %v", path, err)
			},
			Remove: func() { removed++ }, Publish: func() error { return nil }}, nil
	}
	var files MetaFiles
	var x *StagedMeta
	// No room for a whole line: the file is left empty, and the next upload makes a new one.
	room = 10
	err := files.Join(&x, bid, metaOf(newTestID(t), "a.txt"), create)
	if fault.CodeOf(err) != fault.UploadDiskFull || !strings.Contains(err.Error(), "p/"+MetaFileName(bid, 1)) {
		t.Fatalf("join on a full disk: %v", err)
	}
	if x != nil || !made[0].closed || len(made[0].b) != 0 {
		t.Fatalf("a file left empty: kept %v, closed %v, holds %q", x != nil, made[0].closed, made[0].b)
	}
	// Room for two lines and part of a third.
	first, second := metaOf(newTestID(t), "a.txt"), metaOf(newTestID(t), "b.txt")
	room = len(EncodeMetaLine(first))*2 + 5
	for _, m := range []*Info{first, second} {
		if err := files.Join(&x, bid, m, create); err != nil {
			t.Fatal(err)
		}
	}
	if err := files.Join(&x, bid, metaOf(newTestID(t), "c.txt"), create); fault.CodeOf(err) != fault.UploadDiskFull {
		t.Fatalf("third line: %v", err)
	}
	if len(made) != 2 || x.Name != MetaFileName(bid, 2) || !slices.Equal(names, []string{MetaFileName(bid, 1), MetaFileName(bid, 2)}) {
		t.Fatalf("files made %v, the commit's %q", names, x.Name)
	}
	got, err := DecodeMetaFile(made[1].b)
	if err != nil || len(got) != 2 || got[0].ID != first.ID || got[1].ID != second.ID {
		t.Fatalf("the file holds %q (%v)", made[1].b, err)
	}
	if err := x.Seal(); err != nil || !made[1].closed || removed != 0 {
		t.Fatalf("seal: %v, closed %v, removed %d", err, made[1].closed, removed)
	}
	// A seal that fails removes the file.
	x = nil
	room = 1 << 10
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(files.Join(&x, bid, metaOf(newTestID(t), "d.txt"), create))
	made[2].closeErr = errors.New("input/output error")
	if err := x.Seal(); err == nil || removed != 1 {
		t.Fatalf("failed seal: %v, removed %d", err, removed)
	}
}
