package store

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Publish keeps the order of a publish whatever fails: each upload's files made durable, the
// shared metadata made whole, everything flushed, the shared metadata placed, then the uploads
// placed, the places made durable once, and only then each upload done with (and the index's
// bracket closed after). A failure fails only the uploads its step covers; those are taken apart
// before anything is placed, and never placed; uploads placed whose places could not be made
// durable keep the error but are not taken apart, nor done with.
func TestPublishOrder(t *testing.T) {
	bad := errors.New("bad")
	// The uploads: "sN" share the commit's metadata file, "pN" have their own.
	ups := []string{"p1", "s1", "p2", "s2"}
	cases := []struct {
		name    string
		fail    string   // the step that fails ("sync p2", "seal", "flush", "share", "place s1", "placed")
		failed  []string // the uploads that end with an error
		undone  []string // taken apart
		done    []string // done with
		noSteps []string // steps never taken
	}{
		{name: "all published", done: ups},
		{name: "one upload's sync", fail: "sync p2", failed: []string{"p2"}, undone: []string{"p2"}, done: []string{"p1", "s1", "s2"}},
		{name: "the shared file's seal", fail: "seal", failed: []string{"s1", "s2"}, undone: []string{"s1", "s2"}, done: []string{"p1", "p2"}, noSteps: []string{"share"}},
		{name: "the flush", fail: "flush", failed: ups, undone: ups, noSteps: []string{"share", "place p1", "placed"}},
		{name: "the shared file's place", fail: "share", failed: []string{"s1", "s2"}, undone: []string{"s1", "s2"}, done: []string{"p1", "p2"}},
		{name: "one upload's place", fail: "place s1", failed: []string{"s1"}, done: []string{"p1", "p2", "s2"}},
		{name: "the places' durability", fail: "placed", failed: ups, noSteps: []string{"done p1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var steps, undone, done []string
			step := func(s string) error {
				mu.Lock()
				defer mu.Unlock()
				steps = append(steps, s)
				if s == c.fail {
					return bad
				}
				return nil
			}
			errs := Publish(ups, PublishSteps[string]{
				Sync:      func(u string) error { return step("sync " + u) },
				SyncWidth: 2,
				Shared:    func(u string) bool { return strings.HasPrefix(u, "s") },
				Seal:      func() error { return step("seal") },
				Share:     func() error { return step("share") },
				Flush:     func() error { return step("flush") },
				Undo: func(u string, err error) error {
					undone = append(undone, u)
					return err
				},
				Begin:  func() bool { step("begin"); return true },
				End:    func() { step("end") },
				Place:  func(u string) error { return step("place " + u) },
				Placed: func() error { return step("placed") },
				Done:   func(u string) { step("done " + u); done = append(done, u) },
			})
			var failed []string
			for i, err := range errs {
				if err != nil {
					if !errors.Is(err, bad) {
						t.Fatalf("%s failed with %v", ups[i], err)
					}
					failed = append(failed, ups[i])
				}
			}
			if !slices.Equal(failed, c.failed) || !slices.Equal(undone, c.undone) || !slices.Equal(done, c.done) {
				t.Fatalf("failed %v, taken apart %v, done %v; want %v, %v, %v", failed, undone, done, c.failed, c.undone, c.done)
			}
			at := func(s string) int { return slices.Index(steps, s) }
			for _, s := range c.noSteps {
				if at(s) >= 0 {
					t.Fatalf("steps %v: %q taken", steps, s)
				}
			}
			// The order: every sync, then seal, flush, share, then places, placed, done, end.
			order := []string{"seal", "flush", "share", "begin", "placed", "end"}
			last := -1
			for _, s := range steps {
				if strings.HasPrefix(s, "sync ") && at("seal") >= 0 && at(s) > at("seal") {
					t.Fatalf("steps %v: a sync after the seal", steps)
				}
				if strings.HasPrefix(s, "place ") && (at(s) < at("share") || at("placed") >= 0 && at(s) > at("placed")) {
					t.Fatalf("steps %v: %q not between the shared file's place and the places' durability", steps, s)
				}
				if strings.HasPrefix(s, "done ") && (at(s) < at("placed") || at(s) > at("end")) {
					t.Fatalf("steps %v: %q before the places are durable, or after the index's bracket", steps, s)
				}
				if i := slices.Index(order, s); i >= 0 {
					if i < last {
						t.Fatalf("steps %v: %q out of order", steps, s)
					}
					last = i
				}
			}
		})
	}

	// No shared file and a flush that makes everything durable: neither Seal nor Sync is asked.
	var placed []string
	errs := Publish([]string{"p1"}, PublishSteps[string]{
		Flush:  func() error { return nil },
		Place:  func(u string) error { placed = append(placed, u); return nil },
		Placed: func() error { return nil },
		Done:   func(string) {},
	})
	if errs[0] != nil || !slices.Equal(placed, []string{"p1"}) {
		t.Fatalf("without the optional steps: %v, placed %v", errs, placed)
	}

	// Given a Quota, the reservation of every upload is dropped, published or failed.
	m := &memReserver{rs: map[string][]byte{idA: []byte("{}"), idB: []byte("{}"), idC: []byte("{}")}}
	q := &Quota{R: m, Loc: "S", M: fixedMark(MarkText(Limits{MaxFiles: 9}))}
	if _, err := q.Limits(context.Background()); err != nil {
		t.Fatal(err)
	}
	errs = Publish([]string{idA, idB}, PublishSteps[string]{
		Flush:  func() error { return nil },
		Undo:   func(_ string, err error) error { return err },
		Place:  func(u string) error { return map[string]error{idB: bad}[u] },
		Placed: func() error { return nil },
		Done:   func(string) {},
		Quota:  q,
		ID:     func(u string) string { return u },
	})
	if errs[0] != nil || errs[1] == nil || len(m.rs) != 1 || m.rs[idC] == nil {
		t.Fatalf("with a quota: %v, reservations left %v; want only %s's", errs, m.rs, idC)
	}
}
