package store

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"testing"
	"time"
)

// smallMapFiles is SmallFiles in maps: a folder by its name, a file by its name in it; a file in
// unreadable cannot be read, one in gone is listed but not there when read.
type smallMapFiles struct {
	dirs       map[string]map[string][]byte
	unreadable map[string]bool
	gone       map[string]bool
}

type smallMapDir struct {
	f     *smallMapFiles
	files map[string][]byte
}

func (f *smallMapFiles) OpenSmall(rel string, create bool) (SmallDir, error) {
	d := f.dirs[rel]
	if d == nil && !create {
		return nil, nil
	}
	if d == nil {
		d = map[string][]byte{}
		f.dirs[rel] = d
	}
	return smallMapDir{f, d}, nil
}

func (d smallMapDir) Read(name string, limit int64) ([]byte, error) {
	b, ok := d.files[name]
	switch {
	case d.f.unreadable[name]:
		return nil, errors.New("unreadable")
	case !ok || d.f.gone[name]:
		return nil, nil
	}
	return b[:min(int64(len(b)), limit)], nil
}

func (d smallMapDir) Create(name string, body []byte) error {
	if _, ok := d.files[name]; ok {
		return errors.New("exists")
	}
	d.files[name] = body
	return nil
}

func (d smallMapDir) Replace(name string, body []byte) error { d.files[name] = body; return nil }
func (d smallMapDir) Names() ([]string, error) {
	var names []string
	for n := range maps.Keys(d.files) {
		names = append(names, n)
	}
	return names, nil
}
func (d smallMapDir) Remove(name string) error { delete(d.files, name); return nil }
func (d smallMapDir) Close()                   {}

// TestFileReserver: a reservation is a file of reserved/ made create-only under a valid id; a
// store with no such folder has none, and dropping one there is not is no error; one that cannot
// be read is kept empty (no check counts it, and it is dropped), one gone since the listing is
// none.
func TestFileReserver(t *testing.T) {
	ctx := context.Background()
	f := &smallMapFiles{dirs: map[string]map[string][]byte{}, unreadable: map[string]bool{}, gone: map[string]bool{}}
	r := FileReserver{F: f}
	if rs, err := r.Reservations(ctx); err != nil || len(rs) != 0 || f.dirs[reservedDir] != nil {
		t.Fatalf("no folder: %v %v, made %v", rs, err, f.dirs)
	}
	var ids []string
	for range 3 {
		id, _ := NewID()
		ids = append(ids, id)
	}
	if err := r.DropReservation(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if err := r.PutReservation(ctx, "../mark", []byte("x")); err == nil {
		t.Fatal("a key that is no upload id was written")
	}
	for _, id := range ids {
		if err := r.PutReservation(ctx, id, []byte("of "+id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.PutReservation(ctx, ids[0], []byte("again")); err == nil {
		t.Fatal("a reservation was written over")
	}
	f.unreadable[ids[1]], f.gone[ids[2]] = true, true
	rs, err := r.Reservations(ctx)
	if want := map[string][]byte{ids[0]: []byte("of " + ids[0]), ids[1]: {}}; err != nil || !reflect.DeepEqual(rs, want) {
		t.Fatalf("reservations %q %v, want %q", rs, err, want)
	}
	if err := r.DropReservation(ctx, ids[0]); err != nil || f.dirs[reservedDir][ids[0]] != nil {
		t.Fatalf("dropped: %v, left %q", err, f.dirs[reservedDir])
	}
}

// TestFileMark: the mark is read from the internal folder of a store opened first (none when it
// has no folder or no mark), and replaced whole.
func TestFileMark(t *testing.T) {
	ctx := context.Background()
	f := &smallMapFiles{dirs: map[string]map[string][]byte{}}
	refuse := errors.New("not a store")
	var openErr error
	m := FileMark{F: f, Open: func(context.Context) error { return openErr }, Make: func(context.Context) error { return nil }}
	if b, _, err := m.ReadMark(ctx); b != nil || err != nil || len(f.dirs) != 0 {
		t.Fatalf("no folder: %q %v, made %v", b, err, f.dirs)
	}
	if err := m.ReplaceMark(ctx, []byte("mark 1"), ""); err != nil {
		t.Fatal(err)
	}
	if err := m.ReplaceMark(ctx, []byte("mark 2"), ""); err != nil {
		t.Fatal(err)
	}
	if b, _, err := m.ReadMark(ctx); string(b) != "mark 2" || err != nil {
		t.Fatalf("read %q %v", b, err)
	}
	openErr = refuse
	if _, _, err := m.ReadMark(ctx); err != refuse {
		t.Fatalf("a store that cannot be opened: %v", err)
	}
}

// TestFileReserverLock: the limits lock is the backend's, released by its unlock, and never lost
// while held; a lock not taken is its error.
func TestFileReserverLock(t *testing.T) {
	ctx := context.Background()
	busy := errors.New("held by another")
	unlocked := 0
	r := FileReserver{Lock: func(wait time.Duration) (func() error, error) {
		if wait == 0 {
			return nil, busy
		}
		return func() error { unlocked++; return nil }, nil
	}}
	if _, err := r.LockLimits(ctx, 0); err != busy {
		t.Fatalf("not taken: %v", err)
	}
	l, err := r.LockLimits(ctx, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if held, err := l.Unlock(ctx); !held || err != nil || unlocked != 1 {
		t.Fatalf("unlock: held %v, %v, %d unlocks", held, err, unlocked)
	}
}
