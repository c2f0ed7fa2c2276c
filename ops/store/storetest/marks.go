package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// The tests of what marking and listing say of what is not a finished upload: one wording, one
// outcome on every backend.
var markTests = []struct {
	name string
	f    func(t *testing.T, h Harness)
}{
	{"MarkUsedMissingInOneWording", testMarkUsedMissing},
	{"PartialWithoutInfoListedAndSwept", testPartialWithoutInfo},
	{"LoneMarkerNamedAsNoUpload", testLoneMarker},
	{"ForeignMarkerNamedUploadListed", testForeignMarker},
}

// wantNotFinished fails unless marking id used is refused as no finished upload of b, in the one
// wording every backend gives.
func wantNotFinished(t *testing.T, what string, b store.Backend, ids []string, id string) {
	t.Helper()
	err := b.MarkUsed(ctx, ids, time.Now())
	wantCode(t, what, err, fault.UploadMissing)
	want := "upload " + id + ": not a finished upload in store " + b.Location()
	if got := fault.AsError(err, "").Message; got != want {
		t.Fatalf("%s: message %q, want %q", what, got, want)
	}
}

// testMarkUsedMissing: an id that is no finished upload, whatever the reason (a store not made
// yet, no upload of that id, an unfinished upload, one aborted, one swept), is refused in one
// wording that names the id and the store.
func testMarkUsedMissing(t *testing.T, h Harness) {
	b := h.New(t)
	const none = "01900000-0000-7000-8000-000000000000"
	wantNotFinished(t, "an id in a store not made yet", b, []string{none}, none)
	a := upload(t, b, "a.txt", []byte("a"))
	wantNotFinished(t, "an id of no upload", b, []string{a.ID, none}, none)
	part, err := b.Begin(ctx, "p.txt", 10)
	must(t, "begin", err)
	_, err = b.Write(ctx, part, 0, strings.NewReader("01234"))
	must(t, "write", err)
	wantNotFinished(t, "an unfinished upload", b, []string{part}, part)
	must(t, "abort", b.Abort(ctx, part))
	wantNotFinished(t, "an aborted upload", b, []string{part}, part)
	got, err := sweepAll(t, ctx, b, time.Now().Add(time.Hour), false, nil)
	must(t, "sweep", err)
	if got[a.ID] != store.Removed {
		t.Fatalf("sweep outcomes %v, want %s removed", got, a.ID)
	}
	wantNotFinished(t, "a swept upload", b, []string{a.ID}, a.ID)
}

// testPartialWithoutInfo: an unfinished upload, of a folder or of a file, whose info is gone (what
// it wrote is still there) is an unfinished upload all the same: listed, with what it wrote, and
// removed by a sweep, which leaves nothing of it, named or not.
func testPartialWithoutInfo(t *testing.T, h Harness) {
	if h.RemovePartialInfo == nil {
		t.Skip("this backend's harness cannot remove an unfinished upload's info")
	}
	t.Run("Folder", func(t *testing.T) {
		b := h.New(t)
		kept := upload(t, b, "kept.txt", []byte("kept"))
		interruptTree(t, b, writeTree(t, "logs", letterFiles(8)), 3)
		var id string
		l, err := b.List(ctx)
		must(t, "list", err)
		for _, e := range l.Entries {
			if !e.Finished {
				id = e.ID
			}
		}
		if id == "" {
			t.Fatalf("after the interruption: %+v; want an unfinished upload", l.Entries)
		}
		partialWithoutInfo(t, h, b, id, kept)
	})
	t.Run("File", func(t *testing.T) {
		b := h.New(t)
		kept := upload(t, b, "kept.txt", []byte("kept"))
		id, err := b.Begin(ctx, "part.bin", 10)
		must(t, "begin", err)
		_, err = b.Write(ctx, id, 0, strings.NewReader("01234"))
		must(t, "write", err)
		partialWithoutInfo(t, h, b, id, kept)
	})
}

func partialWithoutInfo(t *testing.T, h Harness, b store.Backend, id string, kept *store.Info) {
	h.RemovePartialInfo(t, b, id)
	l, err := b.List(ctx)
	must(t, "list", err)
	if len(l.Entries) != 2 || l.Entries[1].ID != id && l.Entries[0].ID != id || len(l.Skipped) != 0 {
		t.Fatalf("without its info: %+v, skipped %+v; want %s listed unfinished beside %s", l.Entries, l.Skipped, id, kept.ID)
	}
	for _, e := range l.Entries {
		if e.ID == id && (e.Finished || e.Size <= 0 || e.LastUsed.IsZero()) {
			t.Fatalf("without its info: %+v; want it unfinished, with the bytes it wrote and when", e)
		}
	}
	must(t, "mark the kept upload used", b.MarkUsed(ctx, []string{kept.ID}, time.Now().Add(2*time.Hour)))
	got, err := sweepAll(t, ctx, b, time.Now().Add(time.Hour), false, nil)
	must(t, "sweep", err)
	if len(got) != 1 || got[id] != store.Removed {
		t.Fatalf("sweep outcomes %v: want only %s removed", got, id)
	}
	l, err = b.List(ctx)
	must(t, "list after the sweep", err)
	if len(l.Entries) != 1 || l.Entries[0].ID != kept.ID || len(l.Skipped) != 0 || len(l.Leftovers) != 0 {
		t.Fatalf("after the sweep: %+v, skipped %+v, leftovers %+v; want only %s", l.Entries, l.Skipped, l.Leftovers, kept.ID)
	}
	_, err = b.Status(ctx, id)
	wantCode(t, "status of the swept upload", err, fault.UploadMissing)
}

// testLoneMarker: a .used marker with no upload beside it (a use killed as a sweep removed the
// upload, a copy by hand) is no upload: listed as none, named in the one form of what is not an
// upload of this store, left by a sweep, and refused by a use as no finished upload.
func testLoneMarker(t *testing.T, h Harness) {
	if h.PlantMarker == nil {
		t.Skip("this backend's harness cannot plant a marker")
	}
	b := h.New(t)
	a := upload(t, b, "a.txt", []byte("a"))
	const lone = "01900000-0000-7000-8000-0000000000aa"
	h.PlantMarker(t, b, lone)
	named := func(what string) {
		t.Helper()
		l, err := b.List(ctx)
		must(t, what, err)
		if len(l.Entries) != 1 || l.Entries[0].ID != a.ID || len(l.Leftovers) != 0 {
			t.Fatalf("%s: %+v, leftovers %+v; want only %s", what, l.Entries, l.Leftovers, a.ID)
		}
		if len(l.Skipped) != 1 || !strings.Contains(l.Skipped[0].Path, lone) ||
			!strings.HasPrefix(l.Skipped[0].Why, "not an upload of this store: ") {
			t.Fatalf("%s: skipped %+v; want %s named as not an upload of this store", what, l.Skipped, lone)
		}
	}
	named("list")
	wantNotFinished(t, "mark the lone marker's id used", b, []string{lone}, lone)
	got, err := sweepAll(t, ctx, b, time.Now().Add(time.Hour), false, nil)
	must(t, "sweep", err)
	if len(got) != 1 || got[a.ID] != store.Removed {
		t.Fatalf("sweep outcomes %v: want only %s removed", got, a.ID)
	}
	l, err := b.List(ctx)
	must(t, "list after the sweep", err)
	if len(l.Entries) != 0 || len(l.Skipped) != 1 || !strings.Contains(l.Skipped[0].Path, lone) {
		t.Fatalf("after the sweep: %+v, skipped %+v; want the lone marker still named", l.Entries, l.Skipped)
	}
}

// testForeignMarker: a marker beside a finished upload that the store did not write (a link or a
// folder where the local store keeps a file, an object of other words on S3) is named and left in
// place, and its upload is listed all the same, used when that marker was written: a sweep judges
// it by that time, and a use replaces the marker by one of the store's own.
func testForeignMarker(t *testing.T, h Harness) {
	if h.PlantForeignMarker == nil {
		t.Skip("this backend's harness cannot plant a foreign marker")
	}
	b := h.New(t)
	a := upload(t, b, "a.txt", []byte("a"))
	c := upload(t, b, "c.txt", []byte("c"))
	before := time.Now().Add(-2 * time.Second) // a marker keeps at least whole seconds
	h.PlantForeignMarker(t, b, a.ID)
	h.PlantForeignMarker(t, b, c.ID)
	after := time.Now().Add(2 * time.Second)
	l, err := b.List(ctx)
	must(t, "list", err)
	if len(l.Entries) != 2 || len(l.Skipped) != 2 {
		t.Fatalf("listed %+v, skipped %+v; want both uploads listed and both markers named", l.Entries, l.Skipped)
	}
	for i, e := range l.Entries {
		if !e.Finished || e.LastUsed.Before(before) || e.LastUsed.After(after) {
			t.Fatalf("entry %+v: want finished, used when its marker was planted (%v..%v)", e, before, after)
		}
		if s := l.Skipped[i]; !strings.HasSuffix(s.Path, e.ID+"/"+store.UsedName) || s.Why != store.SkipForeignMarker {
			t.Fatalf("skipped %+v: want %s's marker named as %q", s, e.ID, store.SkipForeignMarker)
		}
	}
	used := time.Now().Add(3 * time.Hour).Truncate(time.Second)
	must(t, "mark c used", b.MarkUsed(ctx, []string{c.ID}, used))
	got, err := sweepAll(t, ctx, b, time.Now().Add(time.Hour), false, nil)
	must(t, "sweep", err)
	if len(got) != 1 || got[a.ID] != store.Removed {
		t.Fatalf("sweep outcomes %v: want only %s removed (used when its marker was written)", got, a.ID)
	}
	l, err = b.List(ctx)
	must(t, "list after the sweep", err)
	if len(l.Entries) != 1 || l.Entries[0].ID != c.ID || !l.Entries[0].LastUsed.Equal(used) || len(l.Skipped) != 0 {
		t.Fatalf("after the sweep: %+v, skipped %+v; want %s alone, used at %v, its marker the store's", l.Entries, l.Skipped, c.ID, used)
	}
}
