// Package storetest is the conformance suite every store.Backend must pass (restic's
// internal/backend/test pattern): the rules of docs/store.md and of the step-by-step upload of
// section 3 that do not depend on where the bytes are kept. A backend's own tests call Run with a
// Harness that makes fresh stores; what only one backend can show (links, modes, descriptors)
// stays in that backend's tests.
package storetest

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/zeebo/blake3"
)

// Harness makes the stores the suite works on.
type Harness struct {
	// New returns a store that does not exist yet, at a fresh location.
	New func(t *testing.T) store.Backend
	// NotStore returns a backend for a location that exists and holds one file, notes.txt, and
	// nothing else. Nil: those tests are skipped (every backend where such a location can be
	// made should give one).
	NotStore func(t *testing.T) store.Backend
	// Empty returns a backend for a location that exists and holds nothing. Nil: the backend
	// cannot tell it from one where nothing is (New's).
	Empty func(t *testing.T) store.Backend
	// Exists reports whether the backend's location exists (anything was created there). Nil:
	// the "a missing store stays missing" checks are skipped.
	Exists func(t *testing.T, b store.Backend) bool
	// EditTreeFile changes the file rel of the finished folder upload id named name behind the
	// store's back: data written there (a new file when there was none), or the file removed
	// when data is nil. Nil: the verify test of folder uploads is skipped.
	EditTreeFile func(t *testing.T, b store.Backend, id, name, rel string, data []byte)
	// RemoveFromUpload removes what is at rel in the finished upload id's own place behind the
	// store's back (rel a name there: the upload's folder, or its metadata), with all it holds,
	// as a user's rm -r or aws s3 rm --recursive does. Nil: the tests of a folder upload missing
	// a part are skipped.
	RemoveFromUpload func(t *testing.T, b store.Backend, id, rel string)
	// Reserver returns the backend's primitives of reservations (store.Reserver), for the
	// tests of limits across processes. Nil: those are skipped.
	Reserver func(t *testing.T, b store.Backend) store.Reserver
	// Chunks returns the backend's primitives of the step-by-step upload (store.ChunkBackend),
	// which the tests of limits pause in the middle of a chunk or a finish. Nil: those are
	// skipped.
	Chunks func(t *testing.T, b store.Backend) store.ChunkBackend
	// RemovePartialInfo removes, behind the store's back, what the backend keeps of the
	// unfinished upload id beside what it wrote (its info: name, size, when begun), as a stage
	// killed as it began or a sweep killed while it removed the upload leaves it.
	RemovePartialInfo func(t *testing.T, b store.Backend, id string)
	// PlantMarker writes a .used marker for id, as a use writes one, where there is no upload.
	PlantMarker func(t *testing.T, b store.Backend, id string)
	// PlantForeignMarker puts, behind the store's back, a marker the store does not write in
	// place of the finished upload id's (a link or a folder where a file is kept, an object of
	// other words), as a hand or another program leaves one.
	PlantForeignMarker func(t *testing.T, b store.Backend, id string)
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		f    func(t *testing.T, h Harness)
	}{
		{"MissingStoreIsEmpty", testMissingEmpty},
		{"RoundTrip", testRoundTrip},
		{"WholeOrNothing", testWholeOrNothing},
		{"Offsets", testOffsets},
		{"PastSize", testPastSize},
		{"OpenSizeFixedAtFinish", testOpenSize},
		{"EmptyUpload", testEmptyUpload},
		{"SizeMismatch", testSizeMismatch},
		{"HashMismatch", testHashMismatch},
		{"FinishTwice", testFinishTwice},
		{"Abort", testAbort},
		{"InvalidIDs", testInvalidIDs},
		{"InvalidNames", testInvalidNames},
		{"List", testList},
		{"MarkUsed", testMarkUsed},
		{"SweepRemovesStale", testSweepStale},
		{"SweepKeepsUsedSinceListed", testSweepUsedSince},
		{"SweepDryRun", testSweepDryRun},
		{"SweepDryRunTakesNoLock", testSweepDryRunNoLock},
		{"SweepCancelled", testSweepCancelled},
		{"SweepOneAtATime", testSweepExclusive},
		{"NotStore", testNotStore},
		{"FeaturesDeclared", testFeatures},
	}
	tests = append(tests, stageTests...)
	if h.New(t).Features().Batcher != nil { // a backend without one publishes each upload alone
		tests = append(tests, batchTests...)
	}
	tests = append(tests, treeTests...)
	tests = append(tests, limitsTests...)
	tests = append(tests, markTests...)
	tests = append(tests, locationTests...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, h) })
	}
}

var ctx = context.Background()

var now = time.Now

func sum(b []byte) string {
	s := blake3.Sum256(b)
	return hex.EncodeToString(s[:])
}

// wantCode fails unless err carries code.
func wantCode(t *testing.T, what string, err error, code fault.Code) {
	t.Helper()
	if got := fault.CodeOf(err); got != code {
		t.Fatalf("%s: got error %v (code %q), want code %q", what, err, got, code)
	}
}

// wantMessage: err says want, with its code after it.
func wantMessage(t *testing.T, what string, err error, want string) {
	t.Helper()
	if err == nil || !strings.HasPrefix(err.Error(), want+" (") {
		t.Fatalf("%s: got error %v, want %q", what, err, want)
	}
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// upload makes a finished upload of data named name.
func upload(t *testing.T, b store.Backend, name string, data []byte) *store.Info {
	t.Helper()
	id, err := b.Begin(ctx, name, int64(len(data)))
	must(t, "begin", err)
	off, err := b.Write(ctx, id, 0, bytes.NewReader(data))
	must(t, "write", err)
	if off != int64(len(data)) {
		t.Fatalf("write: offset %d, want %d", off, len(data))
	}
	info, err := b.Finish(ctx, id, int64(len(data)), sum(data))
	must(t, "finish", err)
	return info
}

func readAll(t *testing.T, b store.Backend, id, name string) []byte {
	t.Helper()
	r, err := b.Open(ctx, id, name)
	must(t, "open "+id, err)
	defer r.Close()
	got, err := io.ReadAll(r)
	must(t, "read "+id, err)
	return got
}

func testMissingEmpty(t *testing.T, h Harness) {
	b := h.New(t)
	l, err := b.List(ctx)
	must(t, "list of a missing store", err)
	if len(l.Entries) != 0 {
		t.Fatalf("list of a missing store: %d entries", len(l.Entries))
	}
	const id = "01900000-0000-7000-8000-000000000000"
	_, err = b.Status(ctx, id)
	wantCode(t, "status in a missing store", err, fault.UploadMissing)
	_, err = b.Open(ctx, id, "a.txt")
	wantCode(t, "open in a missing store", err, fault.UploadMissing)
	err = b.MarkUsed(ctx, []string{id}, time.Now())
	wantCode(t, "mark used in a missing store", err, fault.UploadMissing)
	sw, err := b.Sweep(ctx, 0, false)
	must(t, "sweep of a missing store", err)
	must(t, "sweep of a missing store: remove nothing", sw.Remove(ctx, nil, func(store.Entry) bool { return true },
		func(store.Entry, store.Outcome, error) error { return nil }))
	must(t, "sweep close", sw.Close())
	if h.Exists != nil && h.Exists(t, b) {
		t.Fatalf("reading a missing store created it")
	}
	// The first upload makes it.
	upload(t, b, "a.txt", []byte("a"))
	if h.Exists != nil && !h.Exists(t, b) {
		t.Fatalf("an upload did not make the store")
	}
}

func testRoundTrip(t *testing.T, h Harness) {
	b := h.New(t)
	data := bytes.Repeat([]byte("attachctl "), 10000)
	id, err := b.Begin(ctx, "notes.txt", int64(len(data)))
	must(t, "begin", err)
	st, err := b.Status(ctx, id)
	must(t, "status", err)
	if *st != (store.Status{ID: id, Name: "notes.txt", Offset: 0, Size: int64(len(data))}) {
		t.Fatalf("status after begin: %+v", st)
	}
	off := int64(0)
	for _, piece := range [][]byte{data[:1], data[1:40000], data[40000:]} {
		off, err = b.Write(ctx, id, off, bytes.NewReader(piece))
		must(t, "write", err)
		st, err := b.Status(ctx, id)
		must(t, "status", err)
		if st.Offset != off || st.Finished {
			t.Fatalf("status after a write to %d: %+v", off, st)
		}
	}
	info, err := b.Finish(ctx, id, -1, sum(data))
	must(t, "finish", err)
	if info.ID != id || info.Name != "notes.txt" || info.Size != int64(len(data)) || info.Blake3 != sum(data) || info.Made.IsZero() {
		t.Fatalf("finished info: %+v", info)
	}
	st, err = b.Status(ctx, id)
	must(t, "status", err)
	if !st.Finished || st.Offset != int64(len(data)) || st.Size != int64(len(data)) {
		t.Fatalf("status after finish: %+v", st)
	}
	if got := readAll(t, b, id, "notes.txt"); !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, not the %d written", len(got), len(data))
	}
	r, err := b.Open(ctx, id, "notes.txt")
	must(t, "open", err)
	if got := r.Info(); *got != *info {
		t.Fatalf("reader info %+v, finish said %+v", got, info)
	}
	r.Close()
	got, err := b.Info(ctx, id)
	must(t, "info", err)
	if *got != *info {
		t.Fatalf("info %+v, finish said %+v", got, info)
	}
	_, err = b.Open(ctx, id, "other.txt")
	wantCode(t, "open under another name", err, fault.UploadMissing)
}

func testWholeOrNothing(t *testing.T, h Harness) {
	b := h.New(t)
	id, err := b.Begin(ctx, "a.bin", 10)
	must(t, "begin", err)
	_, err = b.Write(ctx, id, 0, strings.NewReader("12345"))
	must(t, "write", err)
	_, err = b.Open(ctx, id, "a.bin")
	wantCode(t, "open an unfinished upload", err, fault.UploadMissing)
	_, err = b.Info(ctx, id)
	wantCode(t, "info of an unfinished upload", err, fault.UploadMissing)
	err = b.MarkUsed(ctx, []string{id}, time.Now())
	wantCode(t, "mark an unfinished upload used", err, fault.UploadMissing)
}

func testOffsets(t *testing.T, h Harness) {
	b := h.New(t)
	id, err := b.Begin(ctx, "a.bin", -1)
	must(t, "begin", err)
	_, err = b.Write(ctx, id, 0, strings.NewReader("hello"))
	must(t, "write", err)
	for _, off := range []int64{0, 4, 6, -1} {
		cur, err := b.Write(ctx, id, off, strings.NewReader("x"))
		wantCode(t, "write at a wrong offset", err, fault.UploadOffset)
		if cur != 5 {
			t.Fatalf("write at %d: current offset given as %d, want 5", off, cur)
		}
		if !strings.Contains(err.Error(), "5") {
			t.Fatalf("upload.offset does not name the current offset: %v", err)
		}
	}
	// A resume: the status says where to go on.
	st, err := b.Status(ctx, id)
	must(t, "status", err)
	off, err := b.Write(ctx, id, st.Offset, strings.NewReader(" world"))
	must(t, "resume", err)
	info, err := b.Finish(ctx, id, off, sum([]byte("hello world")))
	must(t, "finish", err)
	if got := readAll(t, b, info.ID, info.Name); string(got) != "hello world" {
		t.Fatalf("read back %q", got)
	}
	cur, err := b.Write(ctx, id, off, strings.NewReader("more"))
	wantCode(t, "write to a finished upload", err, fault.UploadOffset)
	if cur != off {
		t.Fatalf("write to a finished upload: offset %d, want %d", cur, off)
	}
}

func testPastSize(t *testing.T, h Harness) {
	b := h.New(t)
	id, err := b.Begin(ctx, "a.bin", 8)
	must(t, "begin", err)
	_, err = b.Write(ctx, id, 0, strings.NewReader("12345"))
	must(t, "write", err)
	cur, err := b.Write(ctx, id, 5, strings.NewReader("6789"))
	wantCode(t, "write past the declared size", err, fault.UploadPastSize)
	if cur != 5 {
		t.Fatalf("past size: offset %d, want 5", cur)
	}
	// Through a reader that does not say its length either.
	_, err = b.Write(ctx, id, 5, io.MultiReader(strings.NewReader("67"), strings.NewReader("89")))
	wantCode(t, "write past the declared size, unknown length", err, fault.UploadPastSize)
	st, err := b.Status(ctx, id)
	must(t, "status", err)
	if st.Offset != 5 {
		t.Fatalf("after refused writes the offset is %d, want 5: something of them was kept", st.Offset)
	}
	_, err = b.Write(ctx, id, 5, strings.NewReader("678"))
	must(t, "write up to the size", err)
	info, err := b.Finish(ctx, id, -1, "")
	must(t, "finish", err)
	if got := readAll(t, b, id, info.Name); string(got) != "12345678" {
		t.Fatalf("read back %q", got)
	}
}

func testOpenSize(t *testing.T, h Harness) {
	b := h.New(t)
	id, err := b.Begin(ctx, "a.bin", -1)
	must(t, "begin", err)
	st, err := b.Status(ctx, id)
	must(t, "status", err)
	if st.Size != -1 {
		t.Fatalf("open size: status size %d, want -1", st.Size)
	}
	_, err = b.Write(ctx, id, 0, strings.NewReader("abc"))
	must(t, "write", err)
	info, err := b.Finish(ctx, id, 3, "")
	must(t, "finish", err)
	if info.Size != 3 || info.Blake3 != sum([]byte("abc")) {
		t.Fatalf("finish: %+v", info)
	}
}

// testEmptyUpload: an upload begun and finished with no chunk is a finished upload of no bytes.
func testEmptyUpload(t *testing.T, h Harness) {
	b := h.New(t)
	for _, size := range []int64{0, -1} {
		id, err := b.Begin(ctx, "empty.txt", size)
		must(t, "begin", err)
		info, err := b.Finish(ctx, id, 0, sum(nil))
		must(t, "finish of no bytes", err)
		if info.Size != 0 || info.Blake3 != sum(nil) {
			t.Fatalf("finish: %+v", info)
		}
		if got := readAll(t, b, id, "empty.txt"); len(got) != 0 {
			t.Fatalf("an empty upload reads %q", got)
		}
	}
}

func testSizeMismatch(t *testing.T, h Harness) {
	b := h.New(t)
	id, err := b.Begin(ctx, "a.bin", 4)
	must(t, "begin", err)
	_, err = b.Write(ctx, id, 0, strings.NewReader("abc"))
	must(t, "write", err)
	_, err = b.Finish(ctx, id, -1, "")
	wantCode(t, "finish short of the declared size", err, fault.UploadSizeMismatch)
	_, err = b.Finish(ctx, id, 3, "")
	wantCode(t, "finish with another size than declared", err, fault.UploadSizeMismatch)
	st, err := b.Status(ctx, id)
	must(t, "status", err)
	if st.Finished || st.Offset != 3 {
		t.Fatalf("a refused finish changed the upload: %+v", st)
	}
	_, err = b.Write(ctx, id, 3, strings.NewReader("d"))
	must(t, "write", err)
	_, err = b.Finish(ctx, id, 4, sum([]byte("abcd")))
	must(t, "finish", err)
}

func testHashMismatch(t *testing.T, h Harness) {
	b := h.New(t)
	id, err := b.Begin(ctx, "a.bin", 3)
	must(t, "begin", err)
	_, err = b.Write(ctx, id, 0, strings.NewReader("abc"))
	must(t, "write", err)
	_, err = b.Finish(ctx, id, 3, sum([]byte("abd")))
	wantCode(t, "finish with another hash", err, fault.UploadHashMismatch)
	_, err = b.Finish(ctx, id, 3, "not hex")
	wantCode(t, "finish with a hash that is not hex", err, fault.UploadInvalid)
	st, err := b.Status(ctx, id)
	must(t, "status", err)
	if st.Finished || st.Offset != 3 {
		t.Fatalf("a refused finish changed the upload: %+v", st)
	}
	_, err = b.Open(ctx, id, "a.bin")
	wantCode(t, "open after a refused finish", err, fault.UploadMissing)
	_, err = b.Finish(ctx, id, 3, strings.ToUpper(sum([]byte("abc"))))
	must(t, "finish with the hash in capitals", err)
}

func testFinishTwice(t *testing.T, h Harness) {
	b := h.New(t)
	info := upload(t, b, "a.txt", []byte("abc"))
	again, err := b.Finish(ctx, info.ID, 3, info.Blake3)
	must(t, "finish again", err)
	if *again != *info {
		t.Fatalf("finish again: %+v, first %+v", again, info)
	}
	_, err = b.Finish(ctx, info.ID, 4, "")
	wantCode(t, "finish again with another size", err, fault.UploadSizeMismatch)
	_, err = b.Finish(ctx, info.ID, -1, sum([]byte("abd")))
	wantCode(t, "finish again with another hash", err, fault.UploadHashMismatch)
	if got := readAll(t, b, info.ID, "a.txt"); string(got) != "abc" {
		t.Fatalf("read back %q", got)
	}
}

func testAbort(t *testing.T, h Harness) {
	b := h.New(t)
	id, err := b.Begin(ctx, "a.bin", -1)
	must(t, "begin", err)
	_, err = b.Write(ctx, id, 0, strings.NewReader("abc"))
	must(t, "write", err)
	must(t, "abort", b.Abort(ctx, id))
	_, err = b.Status(ctx, id)
	wantCode(t, "status after abort", err, fault.UploadMissing)
	// Every step of the step-by-step upload says the same of an upload that is not there, on
	// every backend.
	gone := "upload " + id + ": no unfinished upload in store " + b.Location()
	_, err = b.Write(ctx, id, 3, strings.NewReader("d"))
	wantCode(t, "write after abort", err, fault.UploadMissing)
	wantMessage(t, "write after abort", err, gone)
	_, err = b.Finish(ctx, id, -1, "")
	wantCode(t, "finish after abort", err, fault.UploadMissing)
	wantMessage(t, "finish after abort", err, gone)
	err = b.Abort(ctx, id)
	wantCode(t, "abort again", err, fault.UploadMissing)
	wantMessage(t, "abort again", err, gone)
	info := upload(t, b, "done.txt", []byte("x"))
	err = b.Abort(ctx, info.ID)
	wantCode(t, "abort a finished upload", err, fault.UploadInvalid)
	if got := readAll(t, b, info.ID, "done.txt"); string(got) != "x" {
		t.Fatalf("abort of a finished upload changed it: %q", got)
	}
}

var badIDs = []string{
	"",
	"not-an-id",
	"01900000-0000-7000-8000-00000000000G",
	"01900000-0000-7000-8000-00000000000A",   // upper case
	"01900000-0000-4000-8000-000000000000",   // v4
	"{01900000-0000-7000-8000-000000000000}", // braces
	"01900000000070008000000000000000",       // no dashes
	"../01900000-0000-7000-8000-000000000000",
	".attachctl",
}

func testInvalidIDs(t *testing.T, h Harness) {
	b := h.New(t)
	upload(t, b, "a.txt", []byte("a")) // the store exists, so nothing is refused for want of it
	for _, id := range badIDs {
		_, err := b.Status(ctx, id)
		wantCode(t, "status "+id, err, fault.UploadInvalid)
		_, err = b.Write(ctx, id, 0, strings.NewReader("x"))
		wantCode(t, "write "+id, err, fault.UploadInvalid)
		_, err = b.Finish(ctx, id, -1, "")
		wantCode(t, "finish "+id, err, fault.UploadInvalid)
		wantCode(t, "abort "+id, b.Abort(ctx, id), fault.UploadInvalid)
		_, err = b.Open(ctx, id, "a.txt")
		wantCode(t, "open "+id, err, fault.UploadInvalid)
		_, err = b.Info(ctx, id)
		wantCode(t, "info "+id, err, fault.UploadInvalid)
		wantCode(t, "mark used "+id, b.MarkUsed(ctx, []string{id}, time.Now()), fault.UploadInvalid)
	}
}

var badNames = []string{"", ".", "..", "a/b", "a\x00b", "\xff.txt", strings.Repeat("n", 256), ".used", ".upload.json"}

func testInvalidNames(t *testing.T, h Harness) {
	b := h.New(t)
	for _, name := range badNames {
		_, err := b.Begin(ctx, name, -1)
		wantCode(t, "begin "+name, err, fault.UploadInvalid)
	}
	info := upload(t, b, strings.Repeat("n", 255), []byte("a"))
	for _, name := range badNames {
		_, err := b.Open(ctx, info.ID, name)
		wantCode(t, "open "+name, err, fault.UploadInvalid)
	}
	_, err := b.Begin(ctx, "a.txt", -2)
	wantCode(t, "begin with size -2", err, fault.UploadInvalid)
}

func testList(t *testing.T, h Harness) {
	b := h.New(t)
	before := time.Now().Add(-time.Second)
	a := upload(t, b, "a.txt", []byte("aaa"))
	c := upload(t, b, "c.txt", []byte("c"))
	pid, err := b.Begin(ctx, "p.bin", 10)
	must(t, "begin", err)
	_, err = b.Write(ctx, pid, 0, strings.NewReader("12"))
	must(t, "write", err)
	l, err := b.List(ctx)
	must(t, "list", err)
	if len(l.Entries) != 3 {
		t.Fatalf("list: %d entries, want 3: %+v", len(l.Entries), l.Entries)
	}
	byID := map[string]store.Entry{}
	for i, e := range l.Entries {
		if i > 0 && l.Entries[i-1].ID >= e.ID {
			t.Fatalf("list not in id order: %s then %s", l.Entries[i-1].ID, e.ID)
		}
		byID[e.ID] = e
		if e.Made.Before(before) || e.Made.After(time.Now().Add(time.Second)) {
			t.Fatalf("entry %s: made %v, not now", e.ID, e.Made)
		}
	}
	for _, want := range []struct {
		id, name string
		size     int64
		finished bool
	}{{a.ID, "a.txt", 3, true}, {c.ID, "c.txt", 1, true}, {pid, "p.bin", 2, false}} {
		e, ok := byID[want.id]
		if !ok || e.Name != want.name || e.Size != want.size || e.Finished != want.finished {
			t.Fatalf("entry %s: %+v, want %+v", want.id, e, want)
		}
	}
	if !byID[a.ID].LastUsed.IsZero() {
		t.Fatalf("an upload never used has a last use: %v", byID[a.ID].LastUsed)
	}
	if byID[pid].LastUsed.IsZero() {
		t.Fatalf("an unfinished upload has no last write")
	}
}

func testMarkUsed(t *testing.T, h Harness) {
	b := h.New(t)
	a := upload(t, b, "a.txt", []byte("a"))
	c := upload(t, b, "c.txt", []byte("c"))
	at := time.Now().Add(time.Hour).Truncate(time.Second)
	must(t, "mark used", b.MarkUsed(ctx, []string{a.ID, c.ID}, at))
	l, err := b.List(ctx)
	must(t, "list", err)
	for _, e := range l.Entries {
		if !e.LastUsed.Equal(at) {
			t.Fatalf("entry %s: last used %v, want %v", e.ID, e.LastUsed, at)
		}
	}
	// Refused for one id: the others are not marked.
	later := at.Add(time.Hour)
	err = b.MarkUsed(ctx, []string{a.ID, "01900000-0000-7000-8000-000000000000"}, later)
	wantCode(t, "mark used with a missing id", err, fault.UploadMissing)
	l, err = b.List(ctx)
	must(t, "list", err)
	for _, e := range l.Entries {
		if !e.LastUsed.Equal(at) {
			t.Fatalf("a refused mark moved %s to %v", e.ID, e.LastUsed)
		}
	}
}

// sweepAll runs one sweep over every entry with the cutoff before, and returns the outcomes.
func sweepAll(t *testing.T, ctx context.Context, b store.Backend, before time.Time, dryRun bool, between func()) (map[string]store.Outcome, error) {
	t.Helper()
	l, err := b.List(ctx)
	must(t, "list", err)
	stale := func(e store.Entry) bool {
		return e.Made.Before(before) && (e.LastUsed.IsZero() || e.LastUsed.Before(before)) && !e.Busy
	}
	var cands []store.Entry
	for _, e := range l.Entries {
		if stale(e) {
			cands = append(cands, e)
		}
	}
	if between != nil {
		between()
	}
	sw, err := b.Sweep(ctx, 0, dryRun)
	must(t, "sweep", err)
	defer sw.Close()
	got := map[string]store.Outcome{}
	err = sw.Remove(ctx, cands, stale, func(e store.Entry, o store.Outcome, err error) error {
		if _, dup := got[e.ID]; dup {
			t.Errorf("entry %s reported twice", e.ID)
		}
		got[e.ID] = o
		if o == store.Failed {
			t.Errorf("removing %s: %v", e.ID, err)
		}
		return nil
	})
	return got, err
}

func testSweepStale(t *testing.T, h Harness) {
	b := h.New(t)
	a := upload(t, b, "a.txt", []byte("a"))
	c := upload(t, b, "c.txt", []byte("c"))
	pid, err := b.Begin(ctx, "p.bin", -1)
	must(t, "begin", err)
	cutoff := time.Now().Add(time.Hour)
	must(t, "mark used", b.MarkUsed(ctx, []string{c.ID}, cutoff.Add(time.Minute)))
	got, err := sweepAll(t, ctx, b, cutoff, false, nil)
	must(t, "sweep", err)
	if len(got) != 2 || got[a.ID] != store.Removed || got[pid] != store.Removed {
		t.Fatalf("sweep outcomes %v, want %s and %s removed", got, a.ID, pid)
	}
	_, err = b.Open(ctx, a.ID, "a.txt")
	wantCode(t, "open a removed upload", err, fault.UploadMissing)
	_, err = b.Status(ctx, pid)
	wantCode(t, "status of a removed partial", err, fault.UploadMissing)
	err = b.MarkUsed(ctx, []string{a.ID}, time.Now())
	wantCode(t, "mark a removed upload used", err, fault.UploadMissing)
	if got := readAll(t, b, c.ID, "c.txt"); string(got) != "c" {
		t.Fatalf("kept upload reads %q", got)
	}
	l, err := b.List(ctx)
	must(t, "list", err)
	if len(l.Entries) != 1 || l.Entries[0].ID != c.ID {
		t.Fatalf("after the sweep: %+v", l.Entries)
	}
}

func testSweepUsedSince(t *testing.T, h Harness) {
	b := h.New(t)
	a := upload(t, b, "a.txt", []byte("a"))
	cutoff := time.Now().Add(time.Hour)
	got, err := sweepAll(t, ctx, b, cutoff, false, func() {
		// Used after the sweep listed it, before it decides.
		must(t, "mark used", b.MarkUsed(ctx, []string{a.ID}, cutoff.Add(time.Minute)))
	})
	must(t, "sweep", err)
	if got[a.ID] != store.Kept {
		t.Fatalf("an upload used since the listing: outcome %v, want kept", got[a.ID])
	}
	if got := readAll(t, b, a.ID, "a.txt"); string(got) != "a" {
		t.Fatalf("kept upload reads %q", got)
	}
	// Written since the listing: kept too.
	pid, err := b.Begin(ctx, "p.bin", -1)
	must(t, "begin", err)
	got, err = sweepAll(t, ctx, b, time.Now().Add(time.Hour), false, func() {
		must(t, "abort", b.Abort(ctx, pid))
	})
	must(t, "sweep with an entry gone", err)
	if got[pid] != store.Gone {
		t.Fatalf("an upload aborted since the listing: outcome %v, want gone", got[pid])
	}
}

func testSweepDryRun(t *testing.T, h Harness) {
	b := h.New(t)
	a := upload(t, b, "a.txt", []byte("a"))
	pid, err := b.Begin(ctx, "p.bin", -1)
	must(t, "begin", err)
	got, err := sweepAll(t, ctx, b, time.Now().Add(time.Hour), true, nil)
	must(t, "dry run", err)
	if got[a.ID] != store.Removed || got[pid] != store.Removed {
		t.Fatalf("dry run outcomes %v", got)
	}
	if got := readAll(t, b, a.ID, "a.txt"); string(got) != "a" {
		t.Fatalf("a dry run changed an upload: %q", got)
	}
	if _, err := b.Status(ctx, pid); err != nil {
		t.Fatalf("a dry run removed a partial: %v", err)
	}
}

// A dry run writes nothing, the sweep lock included (docs/operations.md), so it neither waits for
// a sweep that runs nor keeps another from starting: on every backend alike.
func testSweepDryRunNoLock(t *testing.T, h Harness) {
	b := h.New(t)
	a := upload(t, b, "a.txt", []byte("a"))
	sw, err := b.Sweep(ctx, 0, false)
	must(t, "sweep", err)
	defer sw.Close()
	got, err := sweepAll(t, ctx, b, time.Now().Add(time.Hour), true, nil)
	must(t, "a dry run while a sweep holds the store", err)
	if got[a.ID] != store.Removed {
		t.Fatalf("dry run outcomes %v", got)
	}
	dry, err := b.Sweep(ctx, 0, true)
	must(t, "a second dry run", err)
	defer dry.Close()
	must(t, "close the sweep", sw.Close())
	again, err := b.Sweep(ctx, 0, false)
	must(t, "a sweep while a dry run is open", err)
	again.Close()
}

func testSweepCancelled(t *testing.T, h Harness) {
	b := h.New(t)
	var infos []*store.Info
	for i := 0; i < 5; i++ {
		infos = append(infos, upload(t, b, "f.txt", []byte{byte('0' + i)}))
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	l, err := b.List(ctx)
	must(t, "list", err)
	sw, err := b.Sweep(ctx, 0, false)
	must(t, "sweep", err)
	removed := map[string]bool{}
	asked := 0
	stale := func(store.Entry) bool {
		// Interrupted while it decides the third: it stops there, or after that one.
		if asked++; asked == 3 {
			cancel()
		}
		return true
	}
	err = sw.Remove(cctx, l.Entries, stale, func(e store.Entry, o store.Outcome, err error) error {
		if o == store.Removed {
			removed[e.ID] = true
		}
		return nil
	})
	sw.Close()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled sweep returned %v, want context.Canceled", err)
	}
	if len(removed) > 3 {
		t.Fatalf("a sweep cancelled while deciding the third removed %d of %d", len(removed), len(infos))
	}
	for _, info := range infos {
		_, err := b.Open(ctx, info.ID, info.Name)
		if removed[info.ID] {
			wantCode(t, "open a reported removal", err, fault.UploadMissing)
		} else if err != nil {
			t.Fatalf("upload %s not reported removed is not intact: %v", info.ID, err)
		}
	}
	// The hold is released: another sweep can start at once.
	sw, err = b.Sweep(ctx, 0, false)
	must(t, "sweep after a cancelled one", err)
	sw.Close()
}

func testSweepExclusive(t *testing.T, h Harness) {
	b := h.New(t)
	upload(t, b, "a.txt", []byte("a"))
	sw, err := b.Sweep(ctx, 0, false)
	must(t, "sweep", err)
	_, err = b.Sweep(ctx, 0, false)
	wantCode(t, "a second sweep at once", err, fault.StoreLocked)
	// One wording on every backend: the lock, and what holds it.
	if !strings.Contains(err.Error(), "the sweep lock (another sweep or rm is running)") {
		t.Errorf("a second sweep at once: %v; want it to name the sweep lock and what holds it", err)
	}
	must(t, "close", sw.Close())
	sw, err = b.Sweep(ctx, 0, false)
	must(t, "sweep after close", err)
	sw.Close()
}

func testNotStore(t *testing.T, h Harness) {
	if h.NotStore == nil {
		t.Skip("this backend cannot make a location that is not a store")
	}
	b := h.NotStore(t)
	const id = "01900000-0000-7000-8000-000000000000"
	_, err := b.List(ctx)
	wantCode(t, "list", err, fault.StoreNotStore)
	_, err = b.Begin(ctx, "a.txt", -1)
	wantCode(t, "begin", err, fault.StoreNotStore)
	_, err = b.Status(ctx, id)
	wantCode(t, "status", err, fault.StoreNotStore)
	_, err = b.Open(ctx, id, "a.txt")
	wantCode(t, "open", err, fault.StoreNotStore)
	// With no id to mark there is still a store to find: a location that is not one is refused.
	wantCode(t, "mark used with no ids", b.MarkUsed(ctx, nil, time.Now()), fault.StoreNotStore)
	wantCode(t, "mark used", b.MarkUsed(ctx, []string{id}, time.Now()), fault.StoreNotStore)
	_, err = b.Sweep(ctx, 0, false)
	wantCode(t, "sweep", err, fault.StoreNotStore)
	_, err = b.Sweep(ctx, 0, true)
	wantCode(t, "dry-run sweep", err, fault.StoreNotStore)
}
