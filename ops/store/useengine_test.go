package store

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// memUses is the smallest UseBackend: uploads and markers in maps, each marker with a version
// that a conditional write must match, as S3's ETag. Hooks stand for a sweep or another use
// acting between the engine's look-up and its write.
type memUses struct {
	mu       sync.Mutex
	jobs     int
	uploads  map[string]bool      // finished uploads
	markers  map[string]time.Time // id -> when used
	versions map[string]int       // id -> marker version (absent: no marker)
	tombs    map[string]bool      // a sweep's tombstone
	held     bool                 // HoldUses proves presence (the local store's lock)
	noStore  bool                 // HoldUses finds no store (no lock to take)
	// beforeWrite runs before each conditional write, without the lock held.
	beforeWrite func(id string)
	writes      int
	undone      int
}

type memUseNote struct{ version int }

func newMemUses(ids ...string) *memUses {
	m := &memUses{jobs: 4, uploads: map[string]bool{}, markers: map[string]time.Time{}, versions: map[string]int{}, tombs: map[string]bool{}}
	for _, id := range ids {
		m.uploads[id] = true
	}
	return m
}

func (m *memUses) UseProperties() UseProperties {
	return UseProperties{Jobs: m.jobs, Where: "mem://uses"}
}

func (m *memUses) HoldUses(context.Context, []string) (func(), error) {
	if m.noStore {
		return nil, fault.Errorf(fault.UploadMissing, "mem://uses: no such store")
	}
	return func() {}, nil
}

func (m *memUses) lookUp(id string) UseTarget {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.uploads[id] && !m.tombs[id] {
		return UseTarget{Err: fault.Errorf(fault.UploadMissing, "upload %s: not there", id)}
	}
	v, ok := m.versions[id]
	if !ok {
		v = -1
	}
	return UseTarget{Swept: m.tombs[id], Note: &memUseNote{v}}
}

func (m *memUses) LookUpUses(ctx context.Context, ids []string) ([]UseTarget, error) {
	ts := make([]UseTarget, len(ids))
	for i, id := range ids {
		ts[i] = m.lookUp(id)
	}
	return ts, nil
}

func (m *memUses) WriteUse(_ context.Context, id string, t *UseTarget, at time.Time) (func() error, func(), error) {
	if m.beforeWrite != nil {
		m.beforeWrite(id)
	}
	if t.Note == nil { // an engine that marks what it refused: the write fails here, too late
		return nil, nil, t.Err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	want := t.Note.(*memUseNote).version
	v, ok := m.versions[id]
	if !ok {
		v = -1
	}
	if v != want { // If-Match / If-None-Match: * lost
		return nil, nil, ErrUseRaced
	}
	m.writes++
	mine := v + 1
	m.versions[id], m.markers[id] = mine, at
	undo := func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.versions[id] == mine {
			delete(m.versions, id)
			delete(m.markers, id)
			m.undone++
		}
	}
	if m.held || want >= 0 {
		return nil, undo, nil
	}
	return func() error { return m.stillThere(id) }, undo, nil
}

func (m *memUses) stillThere(id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.uploads[id] {
		return fault.Errorf(fault.UploadMissing, "upload %s: gone", id)
	}
	return nil
}

// sweepNow removes id as a sweep does: tombstone over the marker, then the upload, then the marker.
func (m *memUses) sweepNow(id string, finish bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tombs[id] = true
	m.versions[id]++
	delete(m.markers, id)
	if finish {
		delete(m.uploads, id)
		delete(m.tombs, id)
		delete(m.versions, id)
	}
}

// TestMarkUsedOn: the rules of MarkUsed over a map backend. Each case breaks if its rule is
// dropped from the engine: checking every id before marking (refused), the tombstone (swept),
// going again after a lost write (raced), giving up after useTries (keeps racing), and the check
// once more with its undo after a write that proved nothing (swept between look and write).
func TestMarkUsedOn(t *testing.T) {
	const a, b, c = "01900000-0000-7000-8000-00000000000a", "01900000-0000-7000-8000-00000000000b", "01900000-0000-7000-8000-00000000000c"
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		ids    []string
		setup  func(m *memUses)
		code   fault.Code
		want   string   // in the error
		marked []string // ids whose marker is at afterwards
		undone int
	}{
		{name: "all marked", ids: []string{a, b, c}, marked: []string{a, b, c}},
		{name: "none", ids: nil},
		{name: "no store: no upload", ids: []string{a, b}, setup: func(m *memUses) { m.noStore = true },
			code: fault.UploadMissing, want: "upload " + a + ": not a finished upload in store mem://uses"},
		{name: "no store, no id", ids: nil, setup: func(m *memUses) { m.noStore = true }},
		{name: "invalid id", ids: []string{a, "x"}, code: fault.UploadInvalid},
		{name: "one missing marks none", ids: []string{a, b, "01900000-0000-7000-8000-0000000000ff"}, code: fault.UploadMissing, want: "not there"},
		{name: "one tombstoned marks none", ids: []string{a, b}, setup: func(m *memUses) { m.sweepNow(b, false) },
			code: fault.UploadMissing, want: "being removed by a sweep of store mem://uses"},
		{name: "another use wrote first: marked on a fresh look", ids: []string{a}, setup: func(m *memUses) {
			once := sync.Once{}
			m.beforeWrite = func(id string) {
				once.Do(func() { m.mu.Lock(); m.versions[id] = 7; m.mu.Unlock() })
			}
		}, marked: []string{a}},
		{name: "a sweep tombstoned it between look and write", ids: []string{a}, setup: func(m *memUses) {
			m.markers[a], m.versions[a] = at.Add(-time.Hour), 0
			m.beforeWrite = func(id string) { m.sweepNow(id, false) }
		}, code: fault.UploadMissing, want: "being removed by a sweep"},
		{name: "a sweep removed it between look and write: no marker outlives it", ids: []string{a, b}, setup: func(m *memUses) {
			m.jobs = 1 // b is not started once a failed
			m.beforeWrite = func(id string) {
				if id == a {
					m.sweepNow(id, true)
				}
			}
		}, code: fault.UploadMissing, want: "gone", undone: 1},
		{name: "keeps racing", ids: []string{a}, setup: func(m *memUses) {
			m.beforeWrite = func(id string) { m.mu.Lock(); m.versions[id] += 2; m.mu.Unlock() }
		}, code: fault.StoreLocked, want: "kept changing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMemUses(a, b, c)
			if tc.setup != nil {
				tc.setup(m)
			}
			err := MarkUsedOn(context.Background(), m, tc.ids, at)
			if got := fault.CodeOf(err); got != tc.code || tc.want != "" && !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v (code %q), want code %q saying %q", err, got, tc.code, tc.want)
			}
			for _, id := range []string{a, b, c} {
				want := false
				for _, w := range tc.marked {
					want = want || w == id
				}
				if got := m.markers[id].Equal(at); got != want {
					t.Errorf("%s marked: %v, want %v", id, got, want)
				}
			}
			if m.undone != tc.undone {
				t.Errorf("undone %d, want %d", m.undone, tc.undone)
			}
		})
	}
}
