package store

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
)

// fakeSite is a location in memory that records the steps OpenSite takes on it.
type fakeSite struct {
	seen   Seen  // what Look finds
	nested error // what Nested says
	steps  []string
}

func (f *fakeSite) Nested() error { f.steps = append(f.steps, "nested"); return f.nested }
func (f *fakeSite) Look() (Seen, error) {
	f.steps = append(f.steps, "look")
	return f.seen, nil
}
func (f *fakeSite) Make() error {
	f.steps = append(f.steps, "make")
	f.seen = Seen{There: true}
	return nil
}
func (f *fakeSite) Mark() error {
	f.steps = append(f.steps, "mark")
	f.seen = Seen{There: true, Mark: true, Names: []TopEntry{{Name: InternalDir, Dir: true}}}
	return nil
}

// TestOpenSite: the order of opening a location. Nested is asked before anything is looked at; a
// read makes and marks nothing; an upload makes a location not there and judges it again, marks
// a store not marked yet (empty, or of an earlier version), and writes nothing to a marked store
// or to a location that is not a store.
func TestOpenSite(t *testing.T) {
	const id = "01900000-0000-7000-8000-000000000000"
	laidOut := Seen{There: true, Names: []TopEntry{{Name: id, Dir: true}}}
	marked := Seen{There: true, Mark: true}
	foreign := Seen{There: true, Names: []TopEntry{{Name: "notes.txt"}}}
	nested := fault.Errorf(fault.StoreNotStore, "inside another store")
	for _, c := range []struct {
		name   string
		seen   Seen
		nested error
		create bool
		want   Verdict
		code   fault.Code
		steps  string
	}{
		{"read, nothing there", Seen{}, nil, false, NotThere, "", "nested look"},
		{"read, empty", Seen{There: true}, nil, false, Empty, "", "nested look"},
		{"read, an earlier version's", laidOut, nil, false, LaidOut, "", "nested look"},
		{"read, marked", marked, nil, false, Marked, "", "nested look"},
		{"read, not a store", foreign, nil, false, 0, fault.StoreNotStore, "nested look"},
		{"read, nested", marked, nested, false, 0, fault.StoreNotStore, "nested"},
		{"upload, nothing there", Seen{}, nil, true, Marked, "", "nested look make look mark"},
		{"upload, empty", Seen{There: true}, nil, true, Marked, "", "nested look mark"},
		{"upload, an earlier version's", laidOut, nil, true, Marked, "", "nested look mark"},
		{"upload, marked", marked, nil, true, Marked, "", "nested look"},
		{"upload, not a store", foreign, nil, true, 0, fault.StoreNotStore, "nested look"},
		{"upload, nested", Seen{}, nested, true, 0, fault.StoreNotStore, "nested"},
	} {
		f := &fakeSite{seen: c.seen, nested: c.nested}
		v, err := OpenSite("/x", f, c.create)
		if fault.CodeOf(err) != c.code || (c.code == "" && err != nil) || (err == nil && v != c.want) {
			t.Errorf("%s: %v, %v; want %v, code %q", c.name, v, err, c.want, c.code)
		}
		if got := strings.Join(f.steps, " "); got != c.steps {
			t.Errorf("%s: steps %q; want %q", c.name, got, c.steps)
		}
	}
}

// TestOpened: a location is opened once for reading and once more for the first upload; a failed
// read-open is said again without opening, until an upload's open succeeds, and then nothing is
// opened again.
func TestOpened(t *testing.T) {
	var o Opened
	var opens []string
	missing := errors.New("no store")
	fail := true
	open := func(create bool) error {
		opens = append(opens, map[bool]string{false: "read", true: "create"}[create])
		if fail && !create {
			return missing
		}
		return nil
	}
	for i, c := range []struct {
		create bool
		err    error
	}{{false, missing}, {false, missing}, {true, nil}, {false, nil}, {true, nil}} {
		if err := o.Open(c.create, open); err != c.err {
			t.Fatalf("open %d (create %v): %v; want %v", i, c.create, err, c.err)
		}
	}
	if got := strings.Join(opens, " "); got != "read create" {
		t.Fatalf("opens %q; want a failed read, then one create", got)
	}

	var p Opened // a read that succeeds is followed by one create
	opens, fail = nil, false
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); p.Open(false, open) }()
	}
	wg.Wait()
	p.Open(true, open)
	p.Open(true, open)
	if got := strings.Join(opens, " "); got != "read create" {
		t.Fatalf("opens %q; want one read, then one create", got)
	}
}
