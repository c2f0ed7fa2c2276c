package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// memSweep is the smallest SweepBackend: entries kept in maps, a trash beside them. It tests the
// sweep's re-check apart from any backend, and shows what a backend gives.
type memSweep struct {
	mu       sync.Mutex
	props    SweepProperties
	now      map[string]Entry // the store as it is now (re-read by Recheck)
	trash    map[string]Entry
	decided  map[string]bool  // set aside by a sweep that died
	conflict map[string]bool  // Doom loses to a use
	broken   map[string]error // Recheck fails
	dropErr  map[string]error // Drop fails
	held     bool             // inside Exclude
	holds    int
	dropped  []string
}

func newMemSweep(p SweepProperties, es ...Entry) *memSweep {
	m := &memSweep{props: p, now: map[string]Entry{}, trash: map[string]Entry{}, decided: map[string]bool{},
		conflict: map[string]bool{}, broken: map[string]error{}, dropErr: map[string]error{}}
	for _, e := range es {
		m.now[e.ID] = e
	}
	return m
}

func (m *memSweep) SweepProperties() SweepProperties { return m.props }

func (m *memSweep) Exclude(context.Context) (func(), error) {
	m.held = true
	m.holds++
	return func() { m.held = false }, nil
}

func (m *memSweep) Recheck(_ context.Context, c Entry) (Reread, error) {
	if err := m.broken[c.ID]; err != nil {
		return Reread{}, err
	}
	e, ok := m.now[c.ID]
	if !ok {
		return Reread{}, NotUnfinished(c.ID, "mem")
	}
	u := UnfinishedState{Name: e.Name, Made: e.Made, Bytes: e.Size, Written: e.LastUsed, Busy: e.Busy}
	return Reread{Used: e.LastUsed, State: u, Decided: m.decided[c.ID]}, nil
}

func (m *memSweep) Doom(_ context.Context, it *SweepItem) error {
	if !m.held {
		return errors.New("Doom outside Exclude")
	}
	if m.conflict[it.Entry.ID] {
		return ErrSweepKept
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.trash[it.Entry.ID] = m.now[it.Entry.ID]
	delete(m.now, it.Entry.ID)
	return nil
}

func (m *memSweep) Drop(_ context.Context, it *SweepItem) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held {
		return errors.New("Drop inside Exclude")
	}
	if err := m.dropErr[it.Entry.ID]; err != nil {
		return err
	}
	delete(m.trash, it.Entry.ID)
	m.dropped = append(m.dropped, it.Entry.ID)
	return nil
}

func (m *memSweep) Restore(it *SweepItem) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now[it.Entry.ID] = m.trash[it.Entry.ID]
	delete(m.trash, it.Entry.ID)
}

func sweepID(n int) string { return fmt.Sprintf("0190c4d2-0000-7000-8000-%012d", n) }

func TestSweepRemove(t *testing.T) {
	cutoff := time.Unix(1000, 0)
	old, recent := time.Unix(10, 0), time.Unix(2000, 0)
	stale := func(e Entry) bool { return e.LastUsed.Before(cutoff) }
	fin := func(n int, used time.Time) Entry {
		return Entry{ID: sweepID(n), Name: "a.png", Size: 3, Finished: true, LastUsed: used}
	}
	boom := errors.New("boom")
	type want struct {
		o       Outcome
		used    time.Time // the LastUsed reported
		present bool      // still in the store after
	}
	for _, tc := range []struct {
		name       string
		dry        bool
		unfinished bool // the candidate is an unfinished upload (only one is ever busy)
		set        func(m *memSweep)
		props      SweepProperties
		want       want
	}{
		{name: "stale", want: want{Removed, old, false}},
		{name: "dry run", dry: true, want: want{Removed, old, true}},
		{name: "used since listed", set: func(m *memSweep) { m.now[sweepID(1)] = fin(1, recent) }, want: want{Kept, recent, true}},
		{name: "being written", unfinished: true, set: func(m *memSweep) { e := m.now[sweepID(1)]; e.Busy = true; m.now[e.ID] = e }, want: want{Kept, old, true}},
		{name: "gone", set: func(m *memSweep) { delete(m.now, sweepID(1)) }, want: want{Gone, old, false}},
		{name: "use wins the race", set: func(m *memSweep) { m.conflict[sweepID(1)] = true }, want: want{Kept, old, true}},
		{name: "unreadable", set: func(m *memSweep) { m.broken[sweepID(1)] = boom }, want: want{Failed, old, true}},
		{name: "gone, said as upload.missing", set: func(m *memSweep) {
			m.broken[sweepID(1)] = fault.Errorf(fault.UploadMissing, "upload %s: not there", sweepID(1))
		}, want: want{Gone, old, true}},
		{name: "unfinished, gone as upload.missing", unfinished: true, set: func(m *memSweep) {
			m.broken[sweepID(1)] = fault.Errorf(fault.UploadMissing, "upload %s: not there", sweepID(1))
		}, want: want{Gone, old, true}},
		{name: "removal fails", set: func(m *memSweep) { m.dropErr[sweepID(1)] = boom }, want: want{Failed, old, false}},
		{name: "decided by a sweep that died", set: func(m *memSweep) {
			m.now[sweepID(1)] = fin(1, recent)
			m.decided[sweepID(1)] = true
		}, want: want{Removed, recent, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fin(1, old)
			c.Finished = !tc.unfinished
			m := newMemSweep(SweepProperties{Batch: 2, Jobs: 2, Undo: true}, c)
			if tc.set != nil {
				tc.set(m)
			}
			var got []Outcome
			var used time.Time
			err := SweepRemove(context.Background(), m, tc.dry, []Entry{c}, stale, func(e Entry, o Outcome, err error) error {
				got = append(got, o)
				used = e.LastUsed
				if (o == Failed) != (err != nil) {
					t.Errorf("outcome %v with error %v", o, err)
				}
				return nil
			})
			if err != nil || len(got) != 1 || got[0] != tc.want.o || !used.Equal(tc.want.used) {
				t.Fatalf("got %v (last used %v), %v; want %v (last used %v)", got, used, err, tc.want.o, tc.want.used)
			}
			if _, ok := m.now[sweepID(1)]; ok != tc.want.present {
				t.Errorf("in the store after: %v, want %v", ok, tc.want.present)
			}
			if tc.dry && m.holds != 0 {
				t.Errorf("a dry run took the exclusion %d times", m.holds)
			}
		})
	}
}

// TestSweepRemoveBatches: the exclusion is held once per batch, and nothing is removed under it.
func TestSweepRemoveBatches(t *testing.T) {
	var es []Entry
	for i := range 7 {
		es = append(es, Entry{ID: sweepID(i), Finished: true})
	}
	m := newMemSweep(SweepProperties{Batch: 3, Jobs: 4, Undo: true}, es...)
	n := 0
	err := SweepRemove(context.Background(), m, false, es, func(Entry) bool { return true }, func(e Entry, o Outcome, err error) error {
		if o != Removed || err != nil {
			t.Errorf("%s: %v, %v", e.ID, o, err)
		}
		n++
		return nil
	})
	if err != nil || n != 7 || m.holds != 3 || len(m.now) != 0 || len(m.trash) != 0 {
		t.Fatalf("err %v, reported %d, holds %d, left %d, trash %d", err, n, m.holds, len(m.now), len(m.trash))
	}
}

// TestSweepRemoveCancel: a sweep cancelled while it removes reports every removal under way and
// puts back what it had not started (Undo); a backend that cannot put back finishes every one.
func TestSweepRemoveCancel(t *testing.T) {
	for _, undo := range []bool{true, false} {
		var es []Entry
		for i := range 6 {
			es = append(es, Entry{ID: sweepID(i), Finished: true})
		}
		m := newMemSweep(SweepProperties{Batch: 6, Jobs: 1, Undo: undo}, es...)
		ctx, cancel := context.WithCancel(context.Background())
		var removed []string
		err := SweepRemove(ctx, m, false, es, func(Entry) bool { return true }, func(e Entry, o Outcome, err error) error {
			if o == Removed {
				removed = append(removed, e.ID)
			}
			cancel()
			return nil
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("undo %v: %v", undo, err)
		}
		sort.Strings(removed)
		sort.Strings(m.dropped)
		if fmt.Sprint(removed) != fmt.Sprint(m.dropped) || len(m.trash) != 0 || len(m.now)+len(removed) != 6 {
			t.Fatalf("undo %v: reported %v, dropped %v, trash %d, left %d", undo, removed, m.dropped, len(m.trash), len(m.now))
		}
		if undo && len(removed) == 6 || !undo && len(removed) != 6 {
			t.Errorf("undo %v: %d removed", undo, len(removed))
		}
	}
}
