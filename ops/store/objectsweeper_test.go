package store

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// sweepShelf is an ObjectSweeper over a shelf of objects, its deletions and multipart aborts in
// log.
func sweepShelf(t *testing.T, s *objectShelf, log *[]string) Sweeper {
	u := s.uploads()
	r := ObjectRemoval{O: &s.MapObjects,
		Walk: func(ctx context.Context, id string) ([]FolderObject, error) {
			l, err := u.WalkID(ctx, id)
			return l.Objects(), err
		},
		Delete: func(ctx context.Context, keys []string) error {
			for _, k := range keys {
				*log = append(*log, "delete "+k)
				s.MapObjects.Delete(ctx, k, "")
			}
			return nil
		},
		HeadTree:       func(context.Context, string) (*ListingHead, error) { return nil, nil },
		DropNote:       func(_ context.Context, note, id string) { *log = append(*log, "note "+note) },
		DropMultiparts: func(_ context.Context, id string) error { *log = append(*log, "multiparts "+id); return nil },
		Abort: func(_ context.Context, id, name, uploadID string) error {
			*log = append(*log, "abort "+uploadID)
			return nil
		},
	}
	sw, err := u.Sweep(context.Background(), r, &s.MapObjects, time.Minute, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	return sw
}

// TestObjectSweeper: each entry is decided again from a walk of its id's folder: a finished
// upload is removed after a tombstone replaced its marker, its object first and its marker last;
// an unfinished one with its info goes as its info says (a stream's multipart upload, its
// partial, the info last), a folder upload's files with no info as such; an entry whose id holds
// something else now is Gone, and nothing of it is touched. The sweep holds the store's lease
// until closed; the leftovers of a finish and of a sweep are dropped.
func TestObjectSweeper(t *testing.T) {
	ctx := context.Background()
	s := &objectShelf{folderObjects: folderObjects{files: map[string]error{"a.txt": nil}}}
	used := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	s.put(t, shelfID(1)+"/a.txt", "abc",
		infoKey(shelfID(3)), "s.bin stream",
		shelfID(5)+"/d/x.txt", "xx",
		shelfID(6)+"/f.txt", "f", infoKey(shelfID(6)), "f.txt", partialDir(shelfID(6))+"c/0", "f",
		infoKey(shelfID(8)), "g.bin")
	if _, err := WriteUseMark(ctx, &s.MapObjects, shelfID(1), UseMark{}, "used", used, ErrSweepKept); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteUseMark(ctx, &s.MapObjects, shelfID(7), UseMark{}, "tombstone", used, ErrSweepKept); err != nil {
		t.Fatal(err)
	}
	var log []string
	sw := sweepShelf(t, s, &log)
	if _, err := s.MapObjects.Get(ctx, LeaseKey("sweep")); err != nil {
		t.Fatalf("the sweep holds no lease: %v", err)
	}
	cands := []Entry{
		{ID: shelfID(1), Name: "a.txt", Finished: true},
		{ID: shelfID(3), Name: "s.bin"},
		{ID: shelfID(5), Name: "d"},
		{ID: shelfID(6), Name: "f.txt"},                     // finished since it was listed
		{ID: shelfID(8), Name: "other.txt", Finished: true}, // another upload now
	}
	outcomes := map[string]Outcome{}
	err := sw.Remove(ctx, cands, func(e Entry) bool { return true }, func(e Entry, o Outcome, err error) error {
		outcomes[e.ID] = o
		if e.ID == shelfID(1) && !e.LastUsed.Equal(used) {
			t.Errorf("the finished upload's last use %v, want its marker's %v", e.LastUsed, used)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Outcome{shelfID(1): Removed, shelfID(3): Removed, shelfID(5): Removed, shelfID(6): Gone, shelfID(8): Gone}
	for id, o := range want {
		if outcomes[id] != o {
			t.Errorf("%s: %v, want %v", id, outcomes[id], o)
		}
	}
	wantLog := []string{"delete " + shelfID(1) + "/a.txt", "delete " + shelfID(1) + "/" + UsedName,
		"abort mp-" + shelfID(3), "multiparts " + shelfID(3),
		"delete " + shelfID(5) + "/d/x.txt", "multiparts " + shelfID(5), "delete " + shelfID(5) + "/" + UsedName}
	if !slices.Equal(log, wantLog) {
		t.Errorf("removals\n%s\nwant\n%s", strings.Join(log, "\n"), strings.Join(wantLog, "\n"))
	}
	log = nil
	for _, l := range []Leftover{{ID: shelfID(6), Partial: true}, {ID: shelfID(7)}} {
		if err := sw.DropLeftover(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	keys, _ := s.MapObjects.List(ctx, "")
	wantKeys := []string{infoKey(shelfID(8)), shelfID(6) + "/f.txt"}
	if !slices.Equal(keys, wantKeys) {
		t.Errorf("left %q, want %q (the finish's partial, the tombstone alone and the lease gone)", keys, wantKeys)
	}
}

// TestObjectSweeperDry: a dry run decides as a sweep does and writes nothing, no lease either.
func TestObjectSweeperDry(t *testing.T) {
	ctx := context.Background()
	s := &objectShelf{folderObjects: folderObjects{files: map[string]error{"a.txt": nil}}}
	s.put(t, shelfID(1)+"/a.txt", "abc")
	sw, err := s.uploads().Sweep(ctx, ObjectRemoval{O: &s.MapObjects}, &s.MapObjects, time.Minute, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	var got Outcome = -1
	err = sw.Remove(ctx, []Entry{{ID: shelfID(1), Name: "a.txt", Finished: true}}, func(Entry) bool { return true },
		func(_ Entry, o Outcome, err error) error { got = o; return err })
	if err != nil || got != Removed {
		t.Fatalf("%v, %v; want Removed", got, err)
	}
	if keys, _ := s.MapObjects.List(ctx, ""); !slices.Equal(keys, []string{shelfID(1) + "/a.txt"}) {
		t.Fatalf("a dry run left %q", keys)
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestObjectUsesMarkUsed: a use marks finished uploads by a conditional write of each marker, one
// found by the look-up; where there was none, the upload is looked at once more after the write
// (a HEAD of its object). An id that holds no finished upload, or only a sweep's tombstone, marks
// none.
func TestObjectUsesMarkUsed(t *testing.T) {
	ctx := context.Background()
	s := &objectShelf{folderObjects: folderObjects{files: map[string]error{"a.txt": nil}}}
	s.put(t, shelfID(1)+"/a.txt", "abc", shelfID(2)+"/a.txt", "abc")
	if _, err := WriteUseMark(ctx, &s.MapObjects, shelfID(2), UseMark{}, "tombstone", time.Now(), ErrSweepKept); err != nil {
		t.Fatal(err)
	}
	u := s.uploads()
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	if err := u.MarkUsed(ctx, []string{shelfID(1)}, at); err != nil {
		t.Fatal(err)
	}
	if m, err := ReadUseMark(ctx, &s.MapObjects, shelfID(1)); err != nil || !m.At.Equal(at) || m.Tombstone {
		t.Fatalf("the marker written: %+v, %v", m, err)
	}
	if s.heads != 1 {
		t.Fatalf("%d HEADs of the upload marked where there was no marker, want 1", s.heads)
	}
	if err := u.MarkUsed(ctx, []string{shelfID(1)}, at); err != nil || s.heads != 1 {
		t.Fatalf("a marker replaced: %v, %d HEADs in all; want none more", err, s.heads)
	}
	for _, id := range []string{shelfID(2), shelfID(3)} {
		if err := u.MarkUsed(ctx, []string{shelfID(1), id}, at.Add(time.Hour)); fault.CodeOf(err) != fault.UploadMissing {
			t.Errorf("%s: %v, want upload.missing", id, err)
		}
	}
	if m, _ := ReadUseMark(ctx, &s.MapObjects, shelfID(1)); !m.At.Equal(at) {
		t.Errorf("a use refused for another id marked %s at %v", shelfID(1), m.At)
	}
}
