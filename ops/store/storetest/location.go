package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// The tests of what a location is (store.Judge): one rule and one wording on every backend.
var locationTests = []struct {
	name string
	f    func(t *testing.T, h Harness)
}{
	{"NotStoreInOneWording", testNotStoreWording},
	{"MarkedOnFirstUpload", testMarkedOnFirstUpload},
	{"LaidOutStoreMarkedOnNextUpload", testLaidOut},
	{"WhatIsGivenCheckedFirst", testGivenCheckedFirst},
}

// testNotStoreWording: a location that holds a file and no store is refused by every call in
// one wording, which names the location and what it holds.
func testNotStoreWording(t *testing.T, h Harness) {
	if h.NotStore == nil {
		t.Skip("this backend cannot make a location that is not a store")
	}
	b := h.NotStore(t)
	const id = "01900000-0000-7000-8000-000000000000"
	want := "store " + b.Location() + ": is not an attachctl store: it holds notes.txt, and no .attachctl/store mark and no upload; nothing was written to it"
	_, list := b.List(ctx)
	_, begin := b.Begin(ctx, "a.txt", -1)
	_, status := b.Status(ctx, id)
	_, open := b.Open(ctx, id, "a.txt")
	_, sweep := b.Sweep(ctx, 0, true)
	for what, err := range map[string]error{"list": list, "begin": begin, "status": status, "open": open,
		"mark used": b.MarkUsed(ctx, []string{id}, time.Now()), "dry-run sweep": sweep} {
		wantCode(t, what, err, fault.StoreNotStore)
		if got := fault.AsError(err, "").Message; got != want {
			t.Errorf("%s: message %q, want %q", what, got, want)
		}
	}
}

// testGivenCheckedFirst: what a call is given is checked before the location is looked at, on
// every backend alike: an id or a name that is not plain, or a BLAKE3 that is not one, is
// upload.invalid even where the location is not a store (which the same calls with a plain id
// find: testNotStore).
func testGivenCheckedFirst(t *testing.T, h Harness) {
	if h.NotStore == nil {
		t.Skip("this backend cannot make a location that is not a store")
	}
	b := h.NotStore(t)
	const id = "01900000-0000-7000-8000-000000000000"
	_, write := b.Write(ctx, "../x", 0, strings.NewReader("a"))
	_, finish := b.Finish(ctx, "../x", -1, "")
	_, badSum := b.Finish(ctx, id, -1, "not hex")
	_, status := b.Status(ctx, "../x")
	_, info := b.Info(ctx, "../x")
	_, openID := b.Open(ctx, "../x", "a.txt")
	_, openName := b.Open(ctx, id, "../a.txt")
	for what, err := range map[string]error{"write": write, "finish": finish, "finish with a BLAKE3 that is not hex": badSum,
		"status": status, "info": info, "open by an id that is not plain": openID, "open by a name that is not plain": openName,
		"abort": b.Abort(ctx, "../x")} {
		wantCode(t, what, err, fault.UploadInvalid)
	}
	if c := b.Features().Checker; c != nil { // verify's check of the upload's own folder
		wantCode(t, "check", c.Check(ctx, "../x"), fault.UploadInvalid)
	}
}

// readMark is the store's mark as the backend keeps it (nil: none).
func readMark(t *testing.T, b store.Backend) []byte {
	t.Helper()
	body, _, err := b.Features().Limiter.(*store.Quota).M.ReadMark(ctx)
	must(t, "read the mark", err)
	return body
}

// empty is a location that exists and holds nothing, or one where nothing is (Harness.Empty).
func empty(t *testing.T, h Harness) store.Backend {
	if h.Empty != nil {
		return h.Empty(t)
	}
	return h.New(t)
}

// testMarkedOnFirstUpload: a location where nothing is, or an empty one, reads as an empty store
// and is not marked by reading; its first upload marks it, with a mark that says no limits.
func testMarkedOnFirstUpload(t *testing.T, h Harness) {
	for what, b := range map[string]store.Backend{"missing": h.New(t), "empty": empty(t, h)} {
		l, err := b.List(ctx)
		must(t, what+": list", err)
		if len(l.Entries) != 0 || readMark(t, b) != nil {
			t.Fatalf("%s: listed %+v and marked before any upload; want an empty store, not marked", what, l.Entries)
		}
		upload(t, b, "a.txt", []byte("a"))
		mark := readMark(t, b)
		if lim, err := store.ParseMark(what, mark); mark == nil || err != nil || !lim.None() {
			t.Fatalf("%s: after the first upload the mark is %q (%v); want a mark without limits", what, mark, err)
		}
	}
}

// testLaidOut: a location without a mark that holds an upload folder (a store of an earlier
// version, or one restored without its internal folder) is a store: read as one, not refused,
// and marked by its next upload.
func testLaidOut(t *testing.T, h Harness) {
	if h.PlantMarker == nil {
		t.Skip("this backend's harness cannot plant an upload folder")
	}
	b := empty(t, h)
	const id = "01900000-0000-7000-8000-000000000000"
	h.PlantMarker(t, b, id)
	_, err := b.List(ctx)
	must(t, "list a store without its mark", err)
	if readMark(t, b) != nil {
		t.Fatal("marked by a listing; only an upload marks a store")
	}
	upload(t, b, "a.txt", []byte("a"))
	if readMark(t, b) == nil {
		t.Fatal("not marked by its next upload")
	}
}
