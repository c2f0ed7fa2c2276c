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
