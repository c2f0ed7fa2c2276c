package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// useFolders are UseFolders in a map: the marks by id; each open and close counted.
type useFolders struct {
	marks  map[string]time.Time // the finished uploads, with their marker's time
	broken string               // an id whose folder cannot be read
	held   bool
	open   int
	noLock bool
}

type useFolder struct {
	f  *useFolders
	id string
}

func (f *useFolders) HoldUses() (func(), error) {
	if f.noLock {
		return nil, fault.Errorf(fault.UploadMissing, "no store")
	}
	f.held = true
	return func() { f.held = false }, nil
}

func (f *useFolders) OpenUse(id string) (UseDir, error) {
	if !f.held {
		return nil, errors.New("opened without the hold")
	}
	if id == f.broken {
		return nil, fault.Errorf(fault.UploadUnreadable, "upload %s: unreadable", id)
	}
	if _, ok := f.marks[id]; !ok {
		return nil, fault.Errorf(fault.UploadMissing, "upload %s: not there", id)
	}
	f.open++
	return useFolder{f, id}, nil
}

func (d useFolder) MarkUse(at time.Time) error {
	if !d.f.held {
		return errors.New("marked without the hold")
	}
	d.f.marks[d.id] = at
	return nil
}

func (d useFolder) Close() { d.f.open-- }

// TestMarkUsedIn: every id is looked up under the hold before any is marked, so one that is no
// finished upload (upload.missing, in the engine's words) or cannot be read marks none; the
// folders opened are closed at the end, and the hold released; a store with no lock holds none.
func TestMarkUsedIn(t *testing.T) {
	ctx := context.Background()
	a, b, c := "0190c4d2-0000-7000-8000-00000000000a", "0190c4d2-0000-7000-8000-00000000000b", "0190c4d2-0000-7000-8000-00000000000c"
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		ids    []string
		broken string
		noLock bool
		want   string // the error's words ("": marked)
	}{
		{"all marked", []string{a, b}, "", false, ""},
		{"one missing: none marked", []string{a, c, b}, "", false, NotFinished(c, "here").Error()},
		{"one unreadable: none marked", []string{a, b}, b, false, "upload " + b + ": unreadable (upload.unreadable)"},
		{"no store", []string{a}, "", true, NotFinished(a, "here").Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &useFolders{marks: map[string]time.Time{a: {}, b: {}}, broken: tc.broken, noLock: tc.noLock}
			err := MarkUsedIn(ctx, f, "here", tc.ids, at)
			if got := ""; err != nil {
				got = err.Error()
				if got != tc.want {
					t.Fatalf("MarkUsedIn: %v, want %q", err, tc.want)
				}
			} else if tc.want != "" {
				t.Fatalf("MarkUsedIn: nil, want %q", tc.want)
			}
			for id, m := range f.marks {
				if marked := m.Equal(at); marked != (tc.want == "") {
					t.Errorf("%s marked: %v", id, marked)
				}
			}
			if f.open != 0 || f.held {
				t.Errorf("%d folders left open, hold kept: %v", f.open, f.held)
			}
		})
	}
}
