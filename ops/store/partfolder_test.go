package store

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// fakePart is an unfinished upload's folder kept in memory (PartFolder): its info, its data
// file, out/<name> when a finish moved data there, and its tree.
type fakePart struct {
	meta     *PartialMeta
	data     *FileStat // nil: none
	out      *FileStat // out/<meta.Name>; nil: none
	outDir   bool      // out/ is there
	busy     bool      // another process holds the lock
	still    func() bool
	tree     bool
	treeN    int64
	treeAt   time.Time
	folderAt time.Time

	opened     *FileStat // the file opened
	openedOut  bool
	locked     bool
	kept       bool
	closed     int
	undone     int
	droppedOut int
}

func ownFile(size int64, at time.Time) *FileStat {
	return &FileStat{Perm: 0o600, Own: true, Links: 1, Size: size, At: at}
}

func (f *fakePart) Info() (*PartialMeta, error) {
	if f.meta == nil {
		return nil, fs.ErrNotExist
	}
	m := *f.meta
	return &m, nil
}

func (f *fakePart) Open(out string, write bool) (string, error) {
	if out == "" {
		if f.data == nil {
			return "p/data", fs.ErrNotExist
		}
		f.opened = f.data
		return "p/data", nil
	}
	if !f.outDir {
		return "", fs.ErrNotExist
	}
	if f.out == nil {
		return "p/out/" + out, fs.ErrNotExist
	}
	f.opened, f.openedOut = f.out, true
	return "p/out/" + out, nil
}

func (f *fakePart) Stat() (FileStat, error) {
	if f.opened == nil {
		return FileStat{Type: fs.ModeDir, At: f.folderAt}, nil
	}
	return *f.opened, nil
}

func (f *fakePart) Lock(wait bool) (bool, error) {
	if f.busy && !wait {
		return true, nil
	}
	f.locked = true
	return false, nil
}

func (f *fakePart) Still() bool { return f.still == nil || f.still() }

func (f *fakePart) Unfinish() error {
	f.undone++
	f.data, f.out = f.out, nil
	return nil
}

func (f *fakePart) DropOut()                       { f.droppedOut++; f.outDir = false }
func (f *fakePart) Tree() (int64, time.Time, bool) { return f.treeN, f.treeAt, f.tree }
func (f *fakePart) Keep() func()                   { f.kept = true; return func() {} }
func (f *fakePart) Close()                         { f.closed++; f.opened, f.openedOut, f.locked = nil, false, false }
func (f *fakePart) opener() func() (PartFolder, error) {
	return func() (PartFolder, error) { return f, nil }
}

func plainCode(path string, err error) error {
	if err == nil || fault.CodeOf(err) != "" {
		return err
	}
	return fault.Errorf(fault.UploadUnreadable, "%s: %w", path, err)
}

const partID = "0190f7a0-0000-7000-8000-000000000001"

// A finish that crashed after it moved data to out/<name> is undone by the writer that locks the
// upload next: out/<name> goes back to data, out/ goes, and the upload is held with its info read
// again under the lock.
func TestLockPartFolderUndoesCrashedFinish(t *testing.T) {
	now := time.Now()
	f := &fakePart{meta: &PartialMeta{Name: "a.bin", Size: 5}, out: ownFile(5, now), outDir: true}
	pf, meta, err := LockPartFolder(partID, "STORE", "p", true, f.opener(), plainCode)
	if err != nil {
		t.Fatal(err)
	}
	if pf != PartFolder(f) || meta.Name != "a.bin" || !f.locked {
		t.Fatalf("held %v meta %+v locked %v", pf, meta, f.locked)
	}
	if f.undone != 1 || f.data == nil || f.out != nil || f.droppedOut != 1 || f.openedOut {
		t.Fatalf("undone %d data %v out %v dropped %d", f.undone, f.data, f.out, f.droppedOut)
	}
}

// A folder that changes under every try (a sweep moves it away while we wait, each time) is
// given up after ten tries, each opening closed.
func TestLockPartFolderKeepsChanging(t *testing.T) {
	f := &fakePart{meta: &PartialMeta{Name: "a.bin", Size: 5}, data: ownFile(0, time.Now()), still: func() bool { return false }}
	opens := 0
	open := func() (PartFolder, error) { opens++; return f, nil }
	_, _, err := LockPartFolder(partID, "STORE", "p", true, open, plainCode)
	if fault.CodeOf(err) != fault.UploadUnreadable || !strings.Contains(err.Error(), "keeps changing under us") {
		t.Fatalf("err %v", err)
	}
	if opens != 10 || f.closed != 10 {
		t.Fatalf("opened %d, closed %d", opens, f.closed)
	}
}

// Not there (no data and no out/<name>, or no info), or a data file with no link left every time:
// no unfinished upload, upload.missing as NotUnfinished says it.
func TestLockPartFolderMissing(t *testing.T) {
	for name, f := range map[string]*fakePart{
		"no data": {meta: &PartialMeta{Name: "a.bin", Size: 5}, outDir: true},
		"no info": {data: ownFile(3, time.Now())},
		"no link": {meta: &PartialMeta{Name: "a.bin", Size: 5}, data: &FileStat{Own: true, Perm: 0o600}},
	} {
		_, _, err := LockPartFolder(partID, "STORE", "p", true, f.opener(), plainCode)
		if name == "no link" {
			if fault.CodeOf(err) != fault.UploadUnreadable || !strings.Contains(err.Error(), "keeps changing") {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if fault.CodeOf(err) != fault.UploadMissing || err.Error() != NotUnfinished(partID, "STORE").Error() {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Without waiting, a file another process holds is an error and nothing stays open; a file that
// is not one of the store's own is refused before any wait.
func TestLockPartFolderBusyAndForeign(t *testing.T) {
	f := &fakePart{meta: &PartialMeta{Name: "a.bin", Size: 5}, data: ownFile(0, time.Now()), busy: true}
	if _, _, err := LockPartFolder(partID, "STORE", "p", false, f.opener(), plainCode); !errors.Is(err, ErrPartBusy) || f.closed != 1 {
		t.Fatalf("busy: %v, closed %d", err, f.closed)
	}
	other := ownFile(0, time.Now())
	other.Own, other.Uid = false, 4242
	f = &fakePart{meta: &PartialMeta{Name: "a.bin", Size: 5}, data: other}
	_, _, err := LockPartFolder(partID, "STORE", "p", true, f.opener(), plainCode)
	if fault.CodeOf(err) != fault.UploadUnreadable || !strings.Contains(err.Error(), "p/data: owned by uid 4242") || f.locked {
		t.Fatalf("foreign: %v, locked %v", err, f.locked)
	}
}

// The listing's reading: a folder upload's bytes are its tree's, when it was last written its
// newest file's; one with no info is a folder upload's when it has a tree; a free lock is kept
// when asked for, a held one makes the upload busy; one with no data is dated by its folder; one
// not there is upload.missing.
func TestReadPartial(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	t1 := t0.Add(time.Hour)
	f := &fakePart{meta: &PartialMeta{Name: "d", Size: -1, Folder: true, Created: t0}, data: ownFile(0, t0), tree: true, treeN: 42, treeAt: t1}
	r, err := ReadPartial(partID, "STORE", "p", true, f.opener(), RegularPartial)
	if err != nil || r.Bytes != 42 || !r.Written.Equal(t1) || r.Release == nil || !f.kept || f.closed != 1 {
		t.Fatalf("folder upload: %+v %v kept %v closed %d", r, err, f.kept, f.closed)
	}
	f = &fakePart{data: ownFile(7, t0), tree: true, treeN: 9, treeAt: t1, busy: true}
	if r, err = ReadPartial(partID, "STORE", "p", true, f.opener(), RegularPartial); err != nil || r.Bytes != 9 || !r.Busy || r.Release != nil || f.kept {
		t.Fatalf("no info, a tree, busy: %+v %v", r, err)
	}
	f = &fakePart{data: ownFile(7, t0)}
	if r, err = ReadPartial(partID, "STORE", "p", false, f.opener(), RegularPartial); err != nil || r.Bytes != 7 || r.Release != nil {
		t.Fatalf("no info, no tree: %+v %v", r, err)
	}
	f = &fakePart{meta: &PartialMeta{Name: "a.bin", Size: 5}, folderAt: t1}
	if r, err = ReadPartial(partID, "STORE", "p", false, f.opener(), RegularPartial); err != nil || !r.Written.Equal(t1) || r.File {
		t.Fatalf("no data: %+v %v", r, err)
	}
	if _, err = ReadPartial(partID, "STORE", "p", false, f.opener(), OwnPartial(partID)); fault.CodeOf(err) != fault.UploadMissing ||
		!strings.Contains(err.Error(), "no such upload in store STORE") {
		t.Fatalf("no data, its writer's check: %v", err)
	}
	f = &fakePart{meta: &PartialMeta{Name: "a.bin", Size: 5}, data: &FileStat{Type: fs.ModeIrregular, Links: 1}}
	if _, err = ReadPartial(partID, "STORE", "p", false, f.opener(), RegularPartial); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a FIFO: %v", err)
	}
	gone := func() (PartFolder, error) { return nil, fs.ErrNotExist }
	if _, err = ReadPartial(partID, "STORE", "p", false, gone, RegularPartial); fault.CodeOf(err) != fault.UploadMissing {
		t.Fatalf("gone: %v", err)
	}
}

// A new upload is admitted before it is made, under the id it is made with, begun now unless its
// info says when; one that cannot be made leaves no reservation behind.
func TestBeginPartialWith(t *testing.T) {
	r := &memReserver{rs: map[string][]byte{}}
	q := &Quota{R: r, Loc: "S", List: func(context.Context) (*Listing, error) { return &Listing{}, nil },
		M: fixedMark(MarkText(Limits{MaxFiles: 1}))}
	before := time.Now()
	var made PartialMeta
	id, err := BeginPartialWith(q, PartialMeta{Name: "a.bin", Size: 5}, func(id string, m PartialMeta) (string, error) {
		if _, held := r.rs[id]; !held {
			t.Errorf("%s made before it was admitted", id)
		}
		made = m
		return id, nil
	})
	if err != nil || ValidID(id) != nil || made.Created.Before(before) || made.Name != "a.bin" {
		t.Fatalf("%q %v %+v", id, err, made)
	}
	if _, err := BeginPartialWith(q, PartialMeta{Name: "b.bin", Size: 5}, func(string, PartialMeta) (string, error) { return "", nil }); fault.CodeOf(err) == "" {
		t.Fatalf("over the limit of one upload: %v", err)
	}
	delete(r.rs, id)
	at := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	_, err = BeginPartialWith(q, PartialMeta{Name: "c.bin", Size: 5, Created: at}, func(id string, m PartialMeta) (string, error) {
		if !m.Created.Equal(at) {
			t.Errorf("begun %v, not %v", m.Created, at)
		}
		return "", errors.New("disk on fire")
	})
	if err == nil || len(r.rs) != 0 {
		t.Fatalf("failed make: %v, reservations %v", err, r.rs)
	}
}
