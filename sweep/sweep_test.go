package sweep

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/storetest"
)

// The policy is tested over the in-memory store (internal/store/mem): what is stale and what a
// sweep reports does not depend on where uploads are kept. local_test.go keeps the sweeps of a
// local folder that only it can show (links, a trash, a killed finish), and race_test.go the
// sweeps racing uses across processes.

var bg = context.Background()

// memFinished makes a finished upload of data named name in s, made at made.
func memFinished(t testing.TB, s *storetest.Mem, name string, data []byte, made time.Time) string {
	t.Helper()
	s.Now = func() time.Time { return made }
	defer func() { s.Now = nil }()
	id, err := s.Begin(bg, name, int64(len(data)))
	if err == nil {
		_, err = s.Write(bg, id, 0, strings.NewReader(string(data)))
	}
	if err == nil {
		_, err = s.Finish(bg, id, -1, "")
	}
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// memPartial makes an unfinished upload of s whose data was last written at written.
func memPartial(t testing.TB, s *storetest.Mem, name string, data []byte, written time.Time) string {
	t.Helper()
	s.Now = func() time.Time { return written }
	defer func() { s.Now = nil }()
	id, err := s.Begin(bg, name, -1)
	if err == nil {
		_, err = s.Write(bg, id, 0, strings.NewReader(string(data)))
	}
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func memRun(t *testing.T, b store.Backend, opts Options) (Summary, []Removed) {
	t.Helper()
	var got []Removed
	sum, err := Run(bg, b, opts, func(r Removed) error { got = append(got, r); return nil })
	if err != nil {
		t.Fatalf("sweep: %v", err)
	}
	return sum, got
}

func TestSweepPolicy(t *testing.T) {
	cut := time.Now().Add(-time.Hour).Truncate(time.Second)
	old, recent := cut.Add(-time.Hour), cut.Add(time.Minute)
	type up struct {
		made, used time.Time // used zero: never used
		partial    bool
		locked     bool // partial: a writer holds its data
		removed    bool
	}
	tests := []struct {
		name string
		up   up
	}{
		{"stale, never used", up{made: old, removed: true}},
		{"stale, used before the cutoff", up{made: old, used: old.Add(time.Minute), removed: true}},
		{"made before, used since", up{made: old, used: recent}},
		{"used exactly at the cutoff", up{made: old, used: cut}},
		{"made since the cutoff", up{made: recent}},
		{"unfinished, written before", up{made: old, partial: true, removed: true}},
		{"unfinished, written since", up{made: recent, partial: true}},
		{"unfinished, stale but being written", up{made: old, partial: true, locked: true}},
	}
	for _, dry := range []bool{false, true} {
		for _, tt := range tests {
			name := tt.name
			if dry {
				name += ", dry run"
			}
			t.Run(name, func(t *testing.T) {
				s := storetest.NewMem("mem://chat")
				var id string
				if tt.up.partial {
					id = memPartial(t, s, "p.bin", []byte("partial"), tt.up.made)
					if tt.up.locked {
						release, err := s.Hold(id)
						if err != nil {
							t.Fatal(err)
						}
						defer release()
					}
				} else {
					id = memFinished(t, s, "f.txt", []byte("finished"), tt.up.made)
					if !tt.up.used.IsZero() {
						if err := s.MarkUsed(bg, []string{id}, tt.up.used); err != nil {
							t.Fatal(err)
						}
					}
				}
				sum, got := memRun(t, s, Options{Before: cut, DryRun: dry})
				removed := tt.up.removed && !(dry && tt.up.locked)
				if removed != (len(got) == 1) || sum.Removed != len(got) {
					t.Fatalf("removed lines %+v, summary %+v; want removed=%v", got, sum, removed)
				}
				_, err := s.Status(bg, id)
				if there := err == nil; there == (removed && !dry) {
					t.Fatalf("upload there = %v after the sweep (%v)", there, err)
				}
				if removed {
					r := got[0]
					if r.ID != id || r.Finished == tt.up.partial || r.Made == nil || (r.LastUsed == nil) != (tt.up.used.IsZero() && !tt.up.partial) {
						t.Fatalf("removed line %+v", r)
					}
					b, _ := json.Marshal(r)
					for _, k := range []string{`"id"`, `"name"`, `"size"`, `"finished"`, `"made"`, `"lastUsed"`} {
						if !strings.Contains(string(b), k) {
							t.Fatalf("line %s lacks %s", b, k)
						}
					}
				} else if sum.Kept != 1 {
					t.Fatalf("summary %+v: want 1 kept", sum)
				}
			})
		}
	}
}

func TestSweepLocked(t *testing.T) {
	s := storetest.NewMem("mem://chat")
	memFinished(t, s, "f.txt", []byte("f"), time.Now().Add(-time.Hour))
	held, err := s.Sweep(bg, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(bg, s, Options{Before: time.Now(), Wait: 30 * time.Millisecond}, func(Removed) error { return nil })
	if fault.CodeOf(err) != fault.StoreLocked {
		t.Fatalf("second sweep: %v, want store.locked", err)
	}
	held.Close()
	if sum, err := Run(bg, s, Options{Before: time.Now()}, func(Removed) error { return nil }); err != nil || sum.Removed != 1 {
		t.Fatalf("sweep after the other: %+v, %v", sum, err)
	}
}

// TestSweepSkipsWhatIsNoUpload: what the store does not recognise is named in the summary and
// left, and the uploads beside it are swept as ever.
func TestSweepSkipsWhatIsNoUpload(t *testing.T) {
	s := storetest.NewMem("mem://chat")
	id := memFinished(t, s, "f.txt", []byte("f"), time.Now().Add(-time.Hour))
	s.Plant("stray.txt")
	sum, got := memRun(t, s, Options{Before: time.Now()})
	if len(got) != 1 || got[0].ID != id || len(sum.Skipped) != 1 || sum.Skipped[0].Path != "mem://chat/stray.txt" {
		t.Fatalf("lines %+v, summary %+v", got, sum)
	}
	if l, err := s.List(bg); err != nil || len(l.Skipped) != 1 {
		t.Fatalf("after the sweep: %+v, %v", l, err)
	}
}
