package storetest

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// The primitives a backend offers for limits that hold across processes (store.Reserver), and
// store.Quota over them. h.Reserver gives a backend's; nil: skipped.
var limitsTests = []struct {
	name string
	f    func(t *testing.T, h Harness)
}{
	{"Reservations", testReservations},
	{"LimitsLockExclusive", testLimitsLock},
	{"LimitsAcrossProcesses", testLimitsAcross},
	{"ChunkCountsReservations", testChunkReservations},
	{"FinishAndAbortDropReservation", testDoneReservation},
	{"ReservationRenewedWhileHeld", testReservationRenewed},
	{"ChunkReservationRenewedWhileWritten", testChunkRenewed},
	{"FinishCountedWhilePublished", testFinishCounted},
}

// limited makes a store with limits l and returns it with its Reserver.
func limited(t *testing.T, h Harness, l store.Limits) (store.Backend, store.Reserver) {
	t.Helper()
	if h.Reserver == nil {
		t.Skip("the harness gives no Reserver")
	}
	b := h.New(t)
	if err := b.Features().Limiter.SetLimits(ctx, l); err != nil {
		t.Fatal(err)
	}
	return b, h.Reserver(t, b)
}

func testReservations(t *testing.T, h Harness) {
	_, r := limited(t, h, store.Limits{MaxFiles: 3})
	if got, err := r.Reservations(ctx); err != nil || len(got) != 0 {
		t.Fatalf("a new store's reservations: %v, %v; want none", got, err)
	}
	const id = "01a235f7-ed69-7ea8-b6e3-ada7612bfe34"
	if err := r.PutReservation(ctx, id, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := r.PutReservation(ctx, id, []byte("two")); err == nil {
		t.Error("a second reservation of the same key was taken: want create-only")
	}
	got, err := r.Reservations(ctx)
	if err != nil || len(got) != 1 || string(got[id]) != "one" {
		t.Fatalf("reservations: %q, %v; want %s: one", got, err, id)
	}
	for range 2 { // removing one that is not there is no error
		if err := r.DropReservation(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := r.Reservations(ctx); err != nil || len(got) != 0 {
		t.Fatalf("after the drop: %q, %v; want none", got, err)
	}
}

func testLimitsLock(t *testing.T, h Harness) {
	_, r := limited(t, h, store.Limits{MaxFiles: 3})
	lk, err := r.LockLimits(ctx, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.LockLimits(ctx, 50*time.Millisecond)
	if fault.CodeOf(err) != fault.StoreLocked || !strings.Contains(err.Error(), "limits lock") {
		t.Errorf("a second lock while held: %v; want store.locked naming the limits lock", err)
	}
	if held, err := lk.Unlock(ctx); err != nil || !held {
		t.Fatalf("unlock: held %v, %v", held, err)
	}
	lk, err = r.LockLimits(ctx, time.Second)
	if err != nil {
		t.Fatalf("the lock after it was released: %v", err)
	}
	lk.Unlock(ctx)
}

// testLimitsAcross admits five uploads at once, each through a Quota of its own (as five
// processes do), against max-files 3 and max-bytes 3000: three are admitted, two are store.full.
func testLimitsAcross(t *testing.T, h Harness) {
	l := store.Limits{MaxFiles: 3, MaxBytes: 3000}
	b, r := limited(t, h, l)
	var wg sync.WaitGroup
	codes := make([]fault.Code, 5)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := store.NewID()
			if err != nil {
				t.Error(err)
				return
			}
			q := &store.Quota{R: r, Loc: b.Location(), List: b.List}
			_, err = q.Admit(ctx, l, id, "f.bin", 900)
			codes[i] = fault.CodeOf(err)
		}()
	}
	wg.Wait()
	n := map[fault.Code]int{}
	for _, c := range codes {
		n[c]++
	}
	if n[""] != 3 || n[fault.StoreFull] != 2 {
		t.Errorf("five at once: %v; want 3 admitted, 2 store.full", codes)
	}
}

// testDoneReservation: the reservation a step-by-step upload took at begin is dropped when it
// is finished (it counts as a finished upload now) or aborted, and not left for a later check.
func testDoneReservation(t *testing.T, h Harness) {
	b, r := limited(t, h, store.Limits{MaxFiles: 3})
	reserved := func(what, id string, want bool) {
		t.Helper()
		got, err := r.Reservations(ctx)
		must(t, "reservations", err)
		if _, ok := got[id]; ok != want {
			t.Fatalf("%s: reserved %v, want %v", what, ok, want)
		}
	}
	for _, finish := range []bool{true, false} {
		id, err := b.Begin(ctx, "a.bin", 1)
		must(t, "begin", err)
		reserved("begun", id, true)
		if finish {
			_, err = b.Write(ctx, id, 0, strings.NewReader("a"))
			must(t, "chunk", err)
			_, err = b.Finish(ctx, id, 1, "")
			must(t, "finish", err)
			reserved("finished", id, false)
		} else {
			must(t, "abort", b.Abort(ctx, id))
			reserved("aborted", id, false)
		}
	}
}

// testChunkReservations: a chunk of a step-by-step upload is checked against the store's limits
// counted with the live reservations (an upload another process admitted and has not begun to
// write), not only against what the listing shows; and while it is written its bytes are held.
func testChunkReservations(t *testing.T, h Harness) {
	l := store.Limits{MaxBytes: 3000}
	b, r := limited(t, h, l)
	id, err := b.Begin(ctx, "a.bin", -1)
	must(t, "begin", err)
	other, err := store.NewID()
	must(t, "id", err)
	q := &store.Quota{R: r, Loc: b.Location(), List: b.List}
	if _, err := q.Admit(ctx, l, other, "o.bin", 2500); err != nil {
		t.Fatal(err)
	}
	_, err = b.Write(ctx, id, 0, strings.NewReader(strings.Repeat("x", 600)))
	wantCode(t, "a chunk of 600 B with 500 B left beside a reservation", err, fault.StoreFull)
	off, err := b.Write(ctx, id, 0, strings.NewReader(strings.Repeat("x", 400)))
	must(t, "a chunk of 400 B", err)
	if off != 400 {
		t.Fatalf("offset %d after 400 B", off)
	}
	more, err := store.NewID()
	must(t, "id", err)
	if _, err := q.Admit(ctx, l, more, "m.bin", 100); err != nil {
		t.Fatalf("100 B more (2500 reserved, 400 written): %v", err)
	}
	last, err := store.NewID()
	must(t, "id", err)
	_, err = q.Admit(ctx, l, last, "l.bin", 1)
	wantCode(t, "one byte more", err, fault.StoreFull)
}

// testReservationRenewed: a reservation is renewed while its upload runs, so that a long upload
// keeps its room past ReserveLease (and ReserveMaxAge): another process's check still counts it.
// Unrenewed, the check took it for one whose holder died and dropped it, and admitted an upload
// into the room the first was still filling.
func testReservationRenewed(t *testing.T, h Harness) {
	l := store.Limits{MaxBytes: 1000}
	b, r := limited(t, h, l)
	defer func(lease, age time.Duration) { store.ReserveLease, store.ReserveMaxAge = lease, age }(store.ReserveLease, store.ReserveMaxAge)
	// A holder's since is kept to the second: the lease is long enough that a renewal a quarter
	// of it after the last, its since up to a second earlier, is well within it, with room for a
	// renewal slowed by a loaded machine (it takes the limits lock) or a slow server.
	store.ReserveLease, store.ReserveMaxAge = 4*time.Second, 4*time.Second
	id, err := store.NewID()
	must(t, "id", err)
	q := &store.Quota{R: r, Loc: b.Location(), List: b.List}
	release, err := q.Admit(ctx, l, id, "long.bin", 900)
	must(t, "the long upload's admission", err)
	defer release()
	time.Sleep(3 * store.ReserveLease / 2) // its reservation would have run out
	other, err := store.NewID()
	must(t, "id", err)
	_, err = (&store.Quota{R: r, Loc: b.Location(), List: b.List}).Admit(ctx, l, other, "other.bin", 900)
	wantCode(t, "900 B more while the long upload of 900 B still runs past its lease", err, fault.StoreFull)
}

// chunks returns the backend's store.ChunkBackend whose chunks and publishes call during first,
// as another process's work goes on meanwhile.
func chunks(t *testing.T, h Harness, b store.Backend, during func()) store.ChunkBackend {
	t.Helper()
	if h.Chunks == nil {
		t.Skip("the harness gives no Chunks")
	}
	return pausedChunks{h.Chunks(t, b), during}
}

type pausedChunks struct {
	store.ChunkBackend
	during func()
}

func (p pausedChunks) OpenChunks(ctx context.Context, id string) (store.ChunkUpload, *store.Info, error) {
	up, fin, err := p.ChunkBackend.OpenChunks(ctx, id)
	if up != nil {
		up = pausedUpload{up, p.during}
	}
	return up, fin, err
}

type pausedUpload struct {
	store.ChunkUpload
	during func()
}

func (p pausedUpload) Append(ctx context.Context, cur int64, r io.Reader, limit int64, over func(int64) error) (int64, error) {
	p.during()
	return p.ChunkUpload.Append(ctx, cur, r, limit, over)
}

func (p pausedUpload) Publish(ctx context.Context, check func(string) error) (*store.Info, bool, error) {
	p.during()
	return p.ChunkUpload.Publish(ctx, check)
}

// testChunkRenewed: a chunk's reservation is renewed while the chunk is written (`upload chunk`
// is a process of its own; the reservation of `upload begin`'s is gone), so that a chunk written
// for longer than ReserveLease (and ReserveMaxAge) keeps its room. Unrenewed, another process's
// check took it for one whose holder died, dropped it, and admitted an upload into the room the
// chunk was still filling: the store passed its max-bytes.
func testChunkRenewed(t *testing.T, h Harness) {
	l := store.Limits{MaxBytes: 1000}
	b, r := limited(t, h, l)
	defer func(lease, age time.Duration) { store.ReserveLease, store.ReserveMaxAge = lease, age }(store.ReserveLease, store.ReserveMaxAge)
	store.ReserveLease, store.ReserveMaxAge = 4*time.Second, 4*time.Second // as in testReservationRenewed
	var admitted error
	cb := chunks(t, h, b, func() {
		time.Sleep(3 * store.ReserveLease / 2) // the chunk is still written past its lease
		other, err := store.NewID()
		must(t, "id", err)
		_, admitted = (&store.Quota{R: r, Loc: b.Location(), List: b.List}).Admit(ctx, l, other, "other.bin", 900)
	})
	id, err := b.Begin(ctx, "long.bin", -1)
	must(t, "begin", err)
	must(t, "the begin's process ends, and its reservation with it", cb.ChunkQuota().Drop(ctx, id))
	off, err := store.WriteChunk(ctx, cb, id, 0, strings.NewReader(strings.Repeat("x", 900)))
	must(t, "the long chunk", err)
	if off != 900 {
		t.Fatalf("offset %d after 900 B", off)
	}
	wantCode(t, "900 B more while a chunk of 900 B is written past its lease", admitted, fault.StoreFull)
}

// testFinishCounted: a finish holds the upload's bytes in the store's limits while it publishes.
// A check whose listing runs meanwhile may find the upload in neither place, unfinished or
// finished (a listing is no snapshot); the finish's reservation counts it then. Before, a finish
// held nothing (`upload finish` is a process of its own), and another upload was admitted into
// the room of the one being published: the store passed its max-bytes. Once published, the
// reservation is gone.
func testFinishCounted(t *testing.T, h Harness) {
	l := store.Limits{MaxBytes: 1000}
	b, r := limited(t, h, l)
	var id string
	// The listing of a check made while id moves from unfinished to finished: it is in neither.
	moving := func(ctx context.Context) (*store.Listing, error) {
		ls, err := b.List(ctx)
		if err != nil {
			return nil, err
		}
		out := *ls
		out.Entries = nil
		for _, e := range ls.Entries {
			if e.ID != id {
				out.Entries = append(out.Entries, e)
			}
		}
		return &out, nil
	}
	var admitted error
	cb := chunks(t, h, b, func() {
		other, err := store.NewID()
		must(t, "id", err)
		_, admitted = (&store.Quota{R: r, Loc: b.Location(), List: moving}).Admit(ctx, l, other, "other.bin", 900)
	})
	var err error
	id, err = b.Begin(ctx, "a.bin", 900)
	must(t, "begin", err)
	data := []byte(strings.Repeat("a", 900))
	_, err = b.Write(ctx, id, 0, strings.NewReader(string(data)))
	must(t, "chunk", err)
	must(t, "the begin's and the chunk's processes end, and their reservations with them", cb.ChunkQuota().Drop(ctx, id))
	info, err := store.FinishChunks(ctx, cb, id, 900, sum(data))
	must(t, "finish", err)
	if info.ID != id || info.Size != 900 {
		t.Fatalf("finished %+v", info)
	}
	wantCode(t, "900 B more while an upload of 900 B is published", admitted, fault.StoreFull)
	got, err := r.Reservations(ctx)
	must(t, "reservations", err)
	if _, ok := got[id]; ok {
		t.Error("the finish's reservation is left after the upload was published")
	}
}
