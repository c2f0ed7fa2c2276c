package store

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// TestRecognizeUploads: the one rule of what is an upload, over metadata as a backend read it.
func TestRecognizeUploads(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	info := func(id string) *Info {
		return &Info{ID: id, Name: "a.png", Size: 3, Blake3: sum, Made: time.Unix(5, 0)}
	}
	for _, tc := range []struct {
		name string
		meta *UploadMeta
		err  error
		want string // "": an upload; "gone": neither listed nor skipped; else in the Skip's Why
		fail bool   // the listing fails
	}{
		{name: "upload", meta: &UploadMeta{Info: info(sweepID(1)), Recorded: sweepID(1)}},
		{name: "no id kept", meta: &UploadMeta{Info: info(""), NoID: true}},
		{name: "planted metadata", meta: &UploadMeta{Info: info(sweepID(2)), Recorded: sweepID(2)}, want: "names upload"},
		{name: "no BLAKE3", meta: &UploadMeta{Info: &Info{Name: "a.png"}, NoID: true}, want: "no BLAKE3"},
		{name: "no metadata", want: "no metadata"},
		{name: "name not plain", meta: &UploadMeta{Info: &Info{Name: "../x", Blake3: sum}, NoID: true}, want: "no plain file name"},
		{name: "listing disagrees", meta: &UploadMeta{Info: info(sweepID(1)), Recorded: sweepID(1), Listed: strings.Repeat("cd", 32)}, want: "other BLAKE3s"},
		{name: "unreadable", err: fault.Errorf(fault.UploadUnreadable, "upload x: damaged"), want: "damaged"},
		{name: "gone since listed", err: fault.Errorf(fault.UploadMissing, "upload x: missing"), want: "gone"},
		{name: "store down", err: fault.Errorf(fault.StoreUnreachable, "store down"), fail: true},
		{name: "uncoded", err: errors.New("boom"), fail: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cands := []Candidate{{ID: sweepID(1), Path: "/s/" + sweepID(1)}}
			metas, skips, err := RecognizeUploads(context.Background(), cands, 2, func(context.Context, int) (*UploadMeta, error) {
				return tc.meta, tc.err
			})
			switch {
			case tc.fail:
				if err == nil {
					t.Fatal("listed")
				}
			case err != nil:
				t.Fatal(err)
			case tc.want == "":
				if metas[0] != tc.meta || len(skips) != 0 {
					t.Fatalf("%v %v", metas, skips)
				}
			case tc.want == "gone":
				if metas[0] != nil || len(skips) != 0 {
					t.Fatalf("%v %v", metas, skips)
				}
			default:
				if metas[0] != nil || len(skips) != 1 || skips[0].Path != cands[0].Path ||
					!strings.HasPrefix(skips[0].Why, "not an upload of this store") || !strings.Contains(skips[0].Why, tc.want) {
					t.Fatalf("%v %+v", metas, skips)
				}
			}
		})
	}
}

// TestReadUploadFolder: which upload an id's folder holds, from the names of its objects alone;
// and whether it still holds what a listing's entry named (the sweep's re-check).
func TestReadUploadFolder(t *testing.T) {
	at := func(s int64) time.Time { return time.Unix(s, 0).UTC() }
	objs := func(names ...string) []FolderObject {
		var os []FolderObject
		for i, n := range names {
			os = append(os, FolderObject{Name: n, Size: int64(10 * (i + 1)), At: at(int64(100 - i))})
		}
		return os
	}
	long := strings.Repeat("x", 300) // no plain name
	for _, tc := range []struct {
		name      string
		objs      []FolderObject
		tombstone bool
		want      UploadFolder
	}{
		{"nothing", nil, false, UploadFolder{}},
		{"file upload", objs("a.png", UsedName), false, UploadFolder{Holds: HoldsFile, Name: "a.png"}},
		{"file upload, tombstone beside", objs("a.png", UsedName), true, UploadFolder{Holds: HoldsFile, Name: "a.png"}},
		{"file upload named like the listing", objs(TreeListName), false, UploadFolder{Holds: HoldsFile, Name: TreeListName, First: at(100), Last: at(100)}},
		{"the first plain name", objs("a.png", "b.png"), false, UploadFolder{Holds: HoldsFile, Name: "a.png"}},
		{"folder upload", objs("d/x", "d/y/z", MetaName, TreeListName, UsedName), false,
			UploadFolder{Holds: HoldsFolder, Name: "d", First: at(97), Last: at(100)}},
		{"folder upload, listing first", objs(TreeListName, MetaName, "d/x"), false,
			UploadFolder{Holds: HoldsFolder, Name: "d", First: at(98), Last: at(100)}},
		{"empty folder upload", objs(MetaName, TreeListName), false, UploadFolder{Holds: HoldsFolder, First: at(99), Last: at(100)}},
		{"folder upload beside a plain name", objs("a.png", "d/x", MetaName, TreeListName), false,
			UploadFolder{Holds: HoldsFolder, Name: "d", First: at(97), Last: at(99)}},
		{"listing whose metadata was removed", objs(TreeListName, "d/x"), false,
			UploadFolder{Holds: HoldsFile, Name: TreeListName, First: at(99), Last: at(100)}},
		{"unfinished folder upload", objs("d/x", MetaName, "d/y"), false,
			UploadFolder{Holds: HoldsUnfinishedFolder, Name: "d", First: at(98), Last: at(100)}},
		{"unfinished, no folder named", objs(MetaName, TreeListName+"/x"), false,
			UploadFolder{Holds: HoldsUnfinishedFolder, First: at(99), Last: at(100)}},
		{"marker alone", objs(UsedName), false, UploadFolder{}},
		{"tombstone alone", objs(UsedName), true, UploadFolder{Holds: HoldsTombstone}},
		{"tombstone beside others'", objs(UsedName, long), true, UploadFolder{}},
		{"others' objects", objs(long, UsedName), false, UploadFolder{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			marker := int64(UsedMarkSize)
			if tc.tombstone {
				marker = int64(TombstoneMarkSize)
			}
			for i := range tc.objs {
				if tc.objs[i].Name == UsedName {
					tc.objs[i].Size = marker
				}
			}
			got := ReadUploadFolder(tc.objs)
			if got.Mark.Exists != slices.ContainsFunc(tc.objs, func(o FolderObject) bool { return o.Name == UsedName }) || got.Mark.Tombstone != tc.tombstone && got.Mark.Exists || got.MarkOdd {
				t.Fatalf("marker %+v (odd %v), tombstone %v", got.Mark, got.MarkOdd, tc.tombstone)
			}
			if got.Mark, got.MarkOdd = (UseMark{}), false; got != tc.want {
				t.Fatalf("%+v, want %+v", got, tc.want)
			}
		})
	}
	// The marker is told used or tombstone by its size alone, its version as listed; one of
	// another size only reading it tells.
	for _, tc := range []struct {
		size      int
		tombstone bool
		odd       bool
	}{{UsedMarkSize, false, false}, {TombstoneMarkSize, true, false}, {UsedMarkSize + 1, false, true}, {0, false, true}} {
		got := ReadUploadFolder([]FolderObject{{Name: "a.png"}, {Name: UsedName, Size: int64(tc.size), Version: `"e1"`}})
		want := UseMark{Exists: true, Tombstone: tc.tombstone, Version: `"e1"`}
		if got.Mark != want || got.MarkOdd != tc.odd || got.Holds != HoldsFile {
			t.Errorf("marker of %d bytes: %+v (odd %v), want %+v (odd %v)", tc.size, got.Mark, got.MarkOdd, want, tc.odd)
		}
	}
	file, folder, unfinished := UploadFolder{Holds: HoldsFile, Name: "a.png"}, UploadFolder{Holds: HoldsFolder}, UploadFolder{Holds: HoldsUnfinishedFolder, Name: "d"}
	for _, tc := range []struct {
		f    UploadFolder
		e    Entry
		want bool
	}{
		{file, Entry{Finished: true, Name: "a.png"}, true},
		{file, Entry{Finished: true, Name: "b.png"}, false},
		{folder, Entry{Finished: true, Name: "d", Folder: true}, true},
		{unfinished, Entry{Finished: true, Name: "d"}, false},
		{UploadFolder{}, Entry{Finished: true, Name: "a.png"}, false},
		{UploadFolder{Holds: HoldsTombstone}, Entry{Finished: true, Name: "a.png"}, false},
		{unfinished, Entry{Name: "d"}, true},
		{UploadFolder{}, Entry{Name: "d"}, true},
		{file, Entry{Name: "a.png"}, false}, // finished since it was listed
		{folder, Entry{Name: "d"}, false},
	} {
		if got := tc.f.Still(tc.e); got != tc.want {
			t.Errorf("%+v still holds %+v: %v, want %v", tc.f, tc.e, got, tc.want)
		}
	}
	// What the files of a folder upload hold: those under its folder, a path with an empty part
	// no file of it.
	fs := []FolderObject{{Name: "d/a", Size: 3}, {Name: "d/b/c", Size: 4}, {Name: "d//x", Size: 5}, {Name: "d/y/", Size: 6},
		{Name: "e/f", Size: 7}, {Name: MetaName, Size: 8}, {Name: "d", Size: 9}}
	if n := FolderTreeBytes(fs, "d"); n != 7 {
		t.Errorf("folder d holds %d bytes, want 7", n)
	}
	if n := FolderTreeBytes(fs, ""); n != 0 {
		t.Errorf("no folder holds %d bytes, want 0", n)
	}
	u := UploadFolder{Holds: HoldsUnfinishedFolder, Name: "d", First: at(1), Last: at(2)}.Unfinished(fs)
	if u != (UnfinishedState{Name: "d", Made: at(1), Written: at(2), Bytes: 7}) {
		t.Errorf("unfinished: %+v", u)
	}
}
