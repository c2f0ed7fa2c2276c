package store

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

func TestReservationLive(t *testing.T) {
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	gone := func(pid int) bool { return pid == 99 }
	holder := func(pid int, host string, age time.Duration) string {
		return Holder{PID: pid, Host: host, Since: now.Add(-age)}.String()
	}
	for _, tc := range []struct {
		name   string
		holder string
		live   bool
	}{
		{"this host, alive", holder(7, "here", time.Minute), true},
		{"this host, alive for hours", holder(7, "here", 5*time.Hour), true},
		{"this host, its process gone", holder(99, "here", time.Second), false},
		{"this host, past the longest age (a pid reused)", holder(7, "here", ReserveMaxAge+time.Second), false},
		{"another host, within the lease", holder(99, "there", ReserveLease-time.Second), true},
		{"another host, past the lease", holder(7, "there", ReserveLease+time.Second), false},
		{"no holder", "", false},
		{"garbage", "pid=x", false},
	} {
		if got := (Reservation{ID: "a", Holder: tc.holder}).Live(now, "here", gone); got != tc.live {
			t.Errorf("%s: Live = %v, want %v", tc.name, got, tc.live)
		}
	}
}

const (
	idA = "01a235f7-ed69-7ea8-b6e3-ada7612bfe34"
	idB = "01a235f7-ed69-7ea8-b6e3-ada7612bfe35"
	idC = "01a235f7-ed69-7ea8-b6e3-ada7612bfe36"
	idD = "01a235f7-ed69-7ea8-b6e3-ada7612bfe37"
)

func TestUsageWith(t *testing.T) {
	ls := &Listing{Entries: []Entry{
		{ID: idA, Size: 100, Finished: true},
		{ID: idB, Name: "b.bin", Size: 30},  // unfinished, 30 bytes written
		{ID: "batch", Size: 0, Batch: true}, // never counted
	}}
	dead := map[string]bool{idD: true}
	live := func(r Reservation) bool { return !dead[r.ID] }
	for _, tc := range []struct {
		name string
		rs   map[string]Reservation
		want Usage
		drop []string
	}{
		{"none", nil, Usage{Files: 2, Bytes: 130}, nil},
		{"not begun yet: one more upload of its size", map[string]Reservation{idC: {ID: idC, Size: 900}}, Usage{Files: 3, Bytes: 1030}, nil},
		{"open size: one more upload, no bytes", map[string]Reservation{idC: {ID: idC, Size: -1}}, Usage{Files: 3, Bytes: 130}, nil},
		{"unfinished: its declared size, not twice", map[string]Reservation{idB: {ID: idB, Size: 50}}, Usage{Files: 2, Bytes: 150}, nil},
		{"unfinished past its reservation", map[string]Reservation{idB: {ID: idB, Size: 10}}, Usage{Files: 2, Bytes: 130}, nil},
		{"published: counted as finished, dropped", map[string]Reservation{idA: {ID: idA, Size: 100}}, Usage{Files: 2, Bytes: 130}, []string{idA}},
		{"dead: dropped", map[string]Reservation{idD: {ID: idD, Size: 900}}, Usage{Files: 2, Bytes: 130}, []string{idD}},
		{"key and id differ: dropped", map[string]Reservation{idC: {ID: idD, Size: 900}}, Usage{Files: 2, Bytes: 130}, []string{idC}},
		{"not a reservation's key: left alone", map[string]Reservation{"x.tmp": {ID: "x.tmp", Size: 900}}, Usage{Files: 2, Bytes: 130}, nil},
	} {
		used, drop := UsageWith(ls, tc.rs, live)
		if used != tc.want || len(drop) != len(tc.drop) || len(drop) > 0 && drop[0] != tc.drop[0] {
			t.Errorf("%s: UsageWith = %+v drop %v, want %+v drop %v", tc.name, used, drop, tc.want, tc.drop)
		}
	}
}

// memReserver is a Reserver in memory; its lock can be made to be lost once (as a lease taken
// over while held).
type memReserver struct {
	lockMu   sync.Mutex
	mu       sync.Mutex
	rs       map[string][]byte
	loseOnce bool
	unlocks  int
}

func (m *memReserver) LockLimits(ctx context.Context, wait time.Duration) (LimitsLock, error) {
	m.lockMu.Lock()
	return memLock{m}, nil
}

type memLock struct{ m *memReserver }

func (l memLock) Unlock(ctx context.Context) (bool, error) {
	l.m.mu.Lock()
	lost := l.m.loseOnce
	l.m.loseOnce = false
	l.m.unlocks++
	l.m.mu.Unlock()
	l.m.lockMu.Unlock()
	return !lost, nil
}

func (m *memReserver) PutReservation(ctx context.Context, key string, body []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.rs[key]; ok {
		return fault.Errorf(fault.UploadInvalid, "%s exists", key)
	}
	m.rs[key] = body
	return nil
}

func (m *memReserver) Reservations(ctx context.Context) (map[string][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]byte{}
	for k, v := range m.rs {
		out[k] = v
	}
	return out, nil
}

func (m *memReserver) DropReservation(ctx context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.rs, key)
	return nil
}

func TestQuotaAdmit(t *testing.T) {
	ids := []string{idA, idB, idC, idD, "01a235f7-ed69-7ea8-b6e3-ada7612bfe38"}
	l := Limits{MaxFiles: 3, MaxBytes: 3000}
	empty := func(context.Context) (*Listing, error) { return &Listing{}, nil }

	// Five at once, each its own Quota (as five processes): three admitted, two store.full.
	m := &memReserver{rs: map[string][]byte{}}
	var wg sync.WaitGroup
	codes := make([]fault.Code, len(ids))
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := &Quota{R: m, Loc: "S", List: empty}
			_, err := q.Admit(context.Background(), l, id, "f.bin", 900)
			codes[i] = fault.CodeOf(err)
		}()
	}
	wg.Wait()
	var ok, full int
	for _, c := range codes {
		switch c {
		case "":
			ok++
		case fault.StoreFull:
			full++
		}
	}
	if ok != 3 || full != 2 || len(m.rs) != 3 {
		t.Errorf("five at once: %d admitted, %d store.full, %d reserved; want 3, 2, 3", ok, full, len(m.rs))
	}

	// A reservation released on failure makes room again; a dead holder's holds none.
	m = &memReserver{rs: map[string][]byte{}}
	q := &Quota{R: m, Loc: "S", List: empty}
	rel, err := q.Admit(context.Background(), l, idA, "f.bin", 2000)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Admit(context.Background(), l, idB, "g.bin", 2000); fault.CodeOf(err) != fault.StoreFull {
		t.Fatalf("second 2000 B: %v, want store.full", err)
	}
	rel()
	dead, _ := json.Marshal(Reservation{ID: idC, Size: 3000, Holder: Holder{PID: 1 << 30, Host: ThisHost(), Since: time.Now()}.String()})
	m.rs[idC] = dead
	if _, err := q.Admit(context.Background(), l, idB, "g.bin", 2000); err != nil {
		t.Fatalf("after release, beside a dead holder's: %v", err)
	}
	if _, ok := m.rs[idC]; ok {
		t.Error("the dead holder's reservation was not dropped")
	}

	// The lock lost while held: the reservation is undone and taken again under the lock.
	m = &memReserver{rs: map[string][]byte{}, loseOnce: true}
	q = &Quota{R: m, Loc: "S", List: empty}
	if _, err := q.Admit(context.Background(), l, idA, "f.bin", 900); err != nil || m.unlocks != 2 || len(m.rs) != 1 {
		t.Errorf("lost lock: err %v, %d unlocks, %d reserved; want nil, 2, 1", err, m.unlocks, len(m.rs))
	}

	// No limits: nothing is locked or reserved.
	m = &memReserver{rs: map[string][]byte{}}
	q = &Quota{R: m, Loc: "S", List: empty}
	if _, err := q.Admit(context.Background(), Limits{}, idA, "f.bin", 900); err != nil || m.unlocks != 0 || len(m.rs) != 0 {
		t.Errorf("no limits: err %v, %d unlocks, %d reserved", err, m.unlocks, len(m.rs))
	}
}

// An upload published while another admission lists the store, its process ending before that
// listing returns: the listing may show it nowhere (neither unfinished nor finished yet, as an S3
// listing or a folder walk can), so its reservation, read while its holder lived, still counts
// it. Before, the holder was asked after the listing, found gone, and the upload counted nothing:
// a fourth upload passed max-files 3.
func TestQuotaPublishedDuringListing(t *testing.T) {
	const pid = 1 << 29
	gone := false
	defer func(f func(int) bool) { pidGone = f }(pidGone)
	pidGone = func(p int) bool { return p == pid && gone }
	body, _ := json.Marshal(Reservation{ID: idB, Name: "b.bin", Size: 900, Holder: Holder{PID: pid, Host: ThisHost(), Since: time.Now()}.String()})
	m := &memReserver{rs: map[string][]byte{idB: body}}
	list := func(context.Context) (*Listing, error) {
		gone = true // idB published and its process ended while the listing ran: not in it
		return &Listing{Entries: []Entry{{ID: idA, Size: 900, Finished: true}}}, nil
	}
	q := &Quota{R: m, Loc: "S", List: list}
	_, err := q.Admit(context.Background(), Limits{MaxFiles: 2}, idC, "c.bin", 900)
	if fault.CodeOf(err) != fault.StoreFull || !strings.Contains(err.Error(), "it holds 2 uploads") {
		t.Fatalf("a third upload beside one listed and one published during the listing: %v; want store.full, holds 2", err)
	}
	// Gone before the listing: it is counted by the listing, or holds nothing.
	_, err = q.Admit(context.Background(), Limits{MaxFiles: 2}, idC, "c.bin", 900)
	if err != nil {
		t.Fatalf("beside a reservation whose holder ended before the listing: %v", err)
	}
}

// An unfinished entry without readable metadata (a batch's staging partial being made or
// removed, as the listing sees it for a moment) counts only when a live reservation names it (a
// partial of an admitted upload being made).
func TestUsageWithNameless(t *testing.T) {
	ls := &Listing{Entries: []Entry{{ID: idA, Name: "a.bin", Size: 900, Finished: true}, {ID: idB}, {ID: idC, Size: 10}}}
	live := func(r Reservation) bool { return r.ID != idD }
	for _, tc := range []struct {
		name string
		rs   map[string]Reservation
		want Usage
	}{
		{"no reservation names them", nil, Usage{Files: 1, Bytes: 900}},
		{"a live reservation names one", map[string]Reservation{idB: {ID: idB, Size: 900}}, Usage{Files: 2, Bytes: 1800}},
		{"a dead one names none", map[string]Reservation{idD: {ID: idD, Size: 900}}, Usage{Files: 1, Bytes: 900}},
	} {
		if used, _ := UsageWith(ls, tc.rs, live); used != tc.want {
			t.Errorf("%s: UsageWith = %+v, want %+v", tc.name, used, tc.want)
		}
	}
}

// A chunk of a step-by-step upload is counted with the live reservations, and reserves its bytes
// while they are written.
func TestQuotaGrow(t *testing.T) {
	l := Limits{MaxBytes: 3000}
	m := &memReserver{rs: map[string][]byte{}}
	unfinished := &Listing{Entries: []Entry{{ID: idA, Size: 1000}}}
	q := &Quota{R: m, Loc: "S", List: func(context.Context) (*Listing, error) { return unfinished, nil }}
	// Another process admitted a 1500 B upload not begun yet: 500 B are left to idA's chunk.
	other := &Quota{R: m, Loc: "S", List: q.List}
	if _, err := other.Admit(context.Background(), l, idB, "b.bin", 1500); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := q.Grow(context.Background(), l, idA, "a.bin", 1000, 1600); fault.CodeOf(err) != fault.StoreFull {
		t.Fatalf("a chunk of 600 B with 500 B left: %v; want store.full", err)
	}
	room, over, release, err := q.Grow(context.Background(), l, idA, "a.bin", 1000, -1)
	if err != nil || room != 500 || over(1501) == nil || over(1500) != nil {
		t.Fatalf("a chunk of unknown length: room %d, %v; want 500", room, err)
	}
	// While it is written, its room is held: a new upload finds none.
	if _, err := other.Admit(context.Background(), l, idC, "c.bin", 1); fault.CodeOf(err) != fault.StoreFull {
		t.Fatalf("a new upload while the chunk is written: %v; want store.full", err)
	}
	release()
	if _, ok := m.rs[idA]; ok {
		t.Error("the chunk's reservation is left after it was written")
	}
	if _, _, _, err := q.Grow(context.Background(), Limits{MaxFiles: 1}, idA, "a.bin", 1000, 5000); err != nil || len(m.rs) != 1 {
		t.Errorf("no byte limits: %v, %d reserved; want nothing checked or reserved", err, len(m.rs))
	}
}

// fixedMark is a store.Marker whose mark is these bytes, and is never rewritten.
type fixedMark []byte

func (fixedMark) MakeStore(context.Context) error                    { return nil }
func (m fixedMark) ReadMark(context.Context) ([]byte, string, error) { return m, "", nil }
func (fixedMark) ReplaceMark(context.Context, []byte, string) error  { return errors.New("fixed") }

// A chunk's reservation is renewed while the chunk is written, as an admitted upload's is: a
// chunk written for longer than ReserveMaxAge (and ReserveLease) keeps its room. Unrenewed, the
// next check took it for one whose holder died, dropped it, and admitted an upload into the room
// the chunk was still filling. Once written, it is dropped and no longer renewed.
func TestQuotaGrowHolds(t *testing.T) {
	defer func(lease, age time.Duration) { ReserveLease, ReserveMaxAge = lease, age }(ReserveLease, ReserveMaxAge)
	// A holder's since is kept to the second: renewed every quarter of 4 s, it is well within.
	ReserveLease, ReserveMaxAge = 4*time.Second, 4*time.Second
	l := Limits{MaxBytes: 1000}
	m := &memReserver{rs: map[string][]byte{}}
	unfinished := &Listing{Entries: []Entry{{ID: idA, Name: "a.bin", Size: 0}}}
	q := &Quota{R: m, Loc: "S", List: func(context.Context) (*Listing, error) { return unfinished, nil }}
	_, _, release, err := q.Grow(context.Background(), l, idA, "a.bin", 0, 900)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * ReserveMaxAge / 2) // the chunk is still written
	other := &Quota{R: m, Loc: "S", List: q.List}
	if _, err := other.Admit(context.Background(), l, idB, "b.bin", 900); fault.CodeOf(err) != fault.StoreFull {
		t.Fatalf("900 B more while a chunk of 900 B is written past its lease: %v; want store.full", err)
	}
	release()
	m.mu.Lock()
	_, left := m.rs[idA]
	m.mu.Unlock()
	if left || q.holds(idA) {
		t.Fatalf("after the chunk: reservation left %v, renewed %v; want neither", left, q.holds(idA))
	}
}

// A finish holds the upload's bytes while it publishes, unchecked; once published its
// reservation is gone, and a finish that failed puts back the upload's own reservation.
func TestQuotaHold(t *testing.T) {
	ctx := context.Background()
	l := Limits{MaxBytes: 1000}
	m := &memReserver{rs: map[string][]byte{}}
	// Past the limits already (another process admitted 900 B): a finish is not refused.
	listing := &Listing{Entries: []Entry{{ID: idA, Name: "a.bin", Size: 600}, {ID: idC, Name: "c.bin", Size: 900, Finished: true}}}
	q := &Quota{R: m, Loc: "S", M: fixedMark(MarkText(l)), List: func(context.Context) (*Listing, error) { return listing, nil }}
	reserved := func() (Reservation, bool) {
		m.mu.Lock()
		defer m.mu.Unlock()
		var r Reservation
		b, ok := m.rs[idA]
		json.Unmarshal(b, &r)
		return r, ok
	}
	// Begun open by this process: its reservation holds the file only.
	if _, err := q.Admit(ctx, Limits{MaxFiles: 5}, idA, "a.bin", -1); err != nil {
		t.Fatal(err)
	}
	done, err := q.Hold(ctx, idA, "a.bin", 600)
	if err != nil {
		t.Fatalf("a finish of a store past its limits: %v; want its bytes held, unchecked", err)
	}
	if r, ok := reserved(); !ok || r.Size != 600 {
		t.Fatalf("while published: %+v, %v; want 600 B held", r, ok)
	}
	done(false)
	if r, ok := reserved(); !ok || r.Size != -1 || !q.holds(idA) {
		t.Fatalf("after a finish that failed: %+v, %v; want its own reservation back, renewed", r, ok)
	}
	done, err = q.Hold(ctx, idA, "a.bin", 600)
	if err != nil {
		t.Fatal(err)
	}
	done(true)
	if r, ok := reserved(); ok || q.holds(idA) {
		t.Fatalf("after the publish: %+v left, renewed %v; want none", r, q.holds(idA))
	}
}
