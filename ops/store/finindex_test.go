package store

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// indexStore is a store as a FinishedIndex reads it: its uploads in the order they were made,
// and a change time that moves with each upload placed or removed.
type indexStore struct {
	at       time.Time
	ids      []string
	infos    map[string]*Info
	bad      map[string]bool // ReadMeta fails (not finished yet, or damaged)
	failList bool
	lists    int // listings read
}

func newIndexStore() *indexStore {
	return &indexStore{at: time.Unix(1000, 0), infos: map[string]*Info{}, bad: map[string]bool{}}
}

func (f *indexStore) Changed() time.Time { return f.at }

func (f *indexStore) IDs() ([]string, error) {
	f.lists++
	if f.failList {
		return nil, errors.New("cannot list")
	}
	return slices.Clone(f.ids), nil
}

func (f *indexStore) ReadMeta(id string) (*Info, error) {
	if m := f.infos[id]; m != nil && !f.bad[id] {
		c := *m
		return &c, nil
	}
	return nil, errors.New("no such finished upload")
}

// place puts a finished upload in the store, as another process would.
func (f *indexStore) place(id, blake3, name string, size int64) *Info {
	m := &Info{ID: id, Blake3: blake3, Name: name, Size: size}
	f.ids = append(f.ids, id)
	f.infos[id] = m
	f.at = f.at.Add(time.Second)
	return m
}

func (f *indexStore) remove(id string) {
	f.ids = slices.DeleteFunc(f.ids, func(i string) bool { return i == id })
	delete(f.infos, id)
	f.at = f.at.Add(time.Second)
}

// TestFinishedIndex checks each rule of the index of finished uploads over a store whose
// listings it counts.
func TestFinishedIndex(t *testing.T) {
	a, b := strings.Repeat("a", 64), strings.Repeat("b", 64)
	find := func(t *testing.T, x *FinishedIndex, f *indexStore, blake3, name, avoid, want string) {
		t.Helper()
		if got := x.Find(f, blake3, name, avoid); got != want {
			t.Fatalf("Find(%.4s, %s, avoid %q) = %q, want %q", blake3, name, avoid, got, want)
		}
	}
	lists := func(t *testing.T, f *indexStore, want int) {
		t.Helper()
		if f.lists != want {
			t.Fatalf("the store was listed %d times, want %d", f.lists, want)
		}
	}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, x *FinishedIndex, f *indexStore)
	}{
		{"keyed on BLAKE3 and name", func(t *testing.T, x *FinishedIndex, f *indexStore) {
			f.place("U1", a, "x.txt", 3)
			find(t, x, f, a, "x.txt", "", "U1")
			find(t, x, f, a, "y.txt", "", "")
			find(t, x, f, b, "x.txt", "", "")
		}},
		{"of two of the same BLAKE3 and name, the later", func(t *testing.T, x *FinishedIndex, f *indexStore) {
			f.place("U1", a, "x.txt", 3)
			f.place("U2", a, "x.txt", 3)
			find(t, x, f, a, "x.txt", "", "U2")
		}},
		{"no BLAKE3: nothing found, nothing listed", func(t *testing.T, x *FinishedIndex, f *indexStore) {
			f.place("U1", "", "x.txt", 3)
			find(t, x, f, "", "x.txt", "", "")
			lists(t, f, 0)
		}},
		{"the size pre-filter: name and size", func(t *testing.T, x *FinishedIndex, f *indexStore) {
			f.place("U1", a, "x.txt", 3)
			for _, c := range []struct {
				name string
				size int64
				want bool
			}{{"x.txt", 3, true}, {"x.txt", 4, false}, {"y.txt", 3, false}} {
				if got := x.MayHave(f, c.name, c.size); got != c.want {
					t.Fatalf("MayHave(%s, %d) = %v, want %v", c.name, c.size, got, c.want)
				}
			}
		}},
		{"the size pre-filter reads new uploads on a miss", func(t *testing.T, x *FinishedIndex, f *indexStore) {
			if x.MayHave(f, "x.txt", 3) {
				t.Fatal("MayHave of an empty store")
			}
			f.place("U1", a, "x.txt", 3)
			if !x.MayHave(f, "x.txt", 3) {
				t.Fatal("MayHave does not see an upload placed since")
			}
		}},
		{"a miss lists only a store changed since", func(t *testing.T, x *FinishedIndex, f *indexStore) {
			f.place("U1", a, "x.txt", 3)
			find(t, x, f, a, "x.txt", "", "U1")
			find(t, x, f, b, "x.txt", "", "")
			find(t, x, f, b, "y.txt", "", "")
			lists(t, f, 1)
			f.place("U2", b, "x.txt", 3)
			find(t, x, f, b, "x.txt", "", "U2")
			lists(t, f, 2)
		}},
		{"a store that cannot tell its change is listed on each miss", func(t *testing.T, x *FinishedIndex, f *indexStore) {
			f.place("U1", a, "x.txt", 3)
			f.at = time.Time{}
			find(t, x, f, b, "x.txt", "", "")
			find(t, x, f, b, "x.txt", "", "")
			lists(t, f, 2)
		}},
		{"a failed listing is listed again", func(t *testing.T, x *FinishedIndex, f *indexStore) {
			f.place("U1", a, "x.txt", 3)
			f.failList = true
			find(t, x, f, a, "x.txt", "", "")
			f.failList = false
			find(t, x, f, a, "x.txt", "", "U1")
		}},
		{"an unreadable upload is read on a later miss", func(t *testing.T, x *FinishedIndex, f *indexStore) {
			f.place("U1", a, "x.txt", 3)
			f.bad["U1"] = true
			find(t, x, f, a, "x.txt", "", "")
			delete(f.bad, "U1")
			f.place("U2", b, "y.txt", 3) // the store changes: the next miss lists it
			find(t, x, f, a, "x.txt", "", "U1")
		}},
		{"the avoided upload is forgotten, not found again", func(t *testing.T, x *FinishedIndex, f *indexStore) {
			f.place("U1", a, "x.txt", 3)
			find(t, x, f, a, "x.txt", "", "U1")
			find(t, x, f, a, "x.txt", "U1", "")
			find(t, x, f, a, "x.txt", "", "") // forgotten, and the store did not change
			f.place("U2", b, "y.txt", 3)      // listed again: U1 is still refused
			find(t, x, f, a, "x.txt", "U1", "")
			f.place("U3", a, "x.txt", 3)
			find(t, x, f, a, "x.txt", "U1", "U3")
		}},
		{"avoiding one upload keeps the other of its key", func(t *testing.T, x *FinishedIndex, f *indexStore) {
			f.place("U1", a, "x.txt", 3)
			f.place("U2", a, "x.txt", 3)
			find(t, x, f, a, "x.txt", "U1", "U2")
		}},
		{"a removed upload is forgotten", func(t *testing.T, x *FinishedIndex, f *indexStore) {
			f.place("U1", a, "x.txt", 3)
			find(t, x, f, a, "x.txt", "", "U1")
			f.remove("U1")
			x.Forget(a, "x.txt", "U1")
			find(t, x, f, a, "x.txt", "", "")
		}},
		{"forgetting another id keeps the one found", func(t *testing.T, x *FinishedIndex, f *indexStore) {
			f.place("U1", a, "x.txt", 3)
			f.place("U2", a, "x.txt", 3)
			find(t, x, f, a, "x.txt", "", "U2")
			x.Forget(a, "x.txt", "U1")
			find(t, x, f, a, "x.txt", "", "U2")
		}},
		{"this process's commits: no listing while placing, the store listed after", func(t *testing.T, x *FinishedIndex, f *indexStore) {
			f.place("U0", a, "x.txt", 3)
			find(t, x, f, a, "x.txt", "", "U0")
			if !x.BeginPlace(f) {
				t.Fatal("BeginPlace on a store listed and not changed since")
			}
			x.Add(f.place("U1", b, "x.txt", 3))
			find(t, x, f, b, "y.txt", "", "")
			find(t, x, f, b, "x.txt", "", "U1") // the commit's own, without a listing
			x.EndPlace(f)
			find(t, x, f, b, "z.txt", "", "")
			lists(t, f, 1)
			f.place("U2", b, "z.txt", 3) // another process's, after the commit
			find(t, x, f, b, "z.txt", "", "U2")
			lists(t, f, 2)
		}},
		{"two commits at once: listed after the last ends", func(t *testing.T, x *FinishedIndex, f *indexStore) {
			find(t, x, f, a, "x.txt", "", "")
			if !x.BeginPlace(f) {
				t.Fatal("BeginPlace on a store listed and not changed since")
			}
			x.Add(f.place("U1", a, "x.txt", 3))
			if !x.BeginPlace(f) {
				t.Fatal("a second BeginPlace while the first commit places")
			}
			x.EndPlace(f)
			x.Add(f.place("U2", b, "x.txt", 3))
			find(t, x, f, b, "y.txt", "", "")
			x.EndPlace(f)
			find(t, x, f, b, "y.txt", "", "")
			lists(t, f, 1)
		}},
		{"a store changed since it was listed: no commit is taken as this process's alone", func(t *testing.T, x *FinishedIndex, f *indexStore) {
			find(t, x, f, a, "x.txt", "", "")
			f.place("U1", a, "x.txt", 3) // another process's
			if x.BeginPlace(f) {
				t.Fatal("BeginPlace on a store changed since it was listed")
			}
			find(t, x, f, a, "x.txt", "", "U1")
		}},
		{"a store never listed: no commit is taken as this process's alone", func(t *testing.T, x *FinishedIndex, f *indexStore) {
			if x.BeginPlace(f) {
				t.Fatal("BeginPlace on a store never listed")
			}
		}},
		{"a store that cannot tell its change: no commit is taken as this process's alone", func(t *testing.T, x *FinishedIndex, f *indexStore) {
			f.at = time.Time{}
			find(t, x, f, a, "x.txt", "", "")
			if x.BeginPlace(f) {
				t.Fatal("BeginPlace on a store that cannot tell its change")
			}
			f.ids, f.infos["U1"] = append(f.ids, "U1"), &Info{ID: "U1", Blake3: a, Name: "x.txt", Size: 3}
			find(t, x, f, a, "x.txt", "", "U1")
		}},
		{"no source: what was added", func(t *testing.T, x *FinishedIndex, f *indexStore) {
			f.place("U1", a, "x.txt", 3) // not told
			x.Add(&Info{ID: "U2", Blake3: b, Name: "x.txt", Size: 3})
			if x.Find(nil, a, "x.txt", "") != "" || x.MayHave(nil, "x.txt", 4) {
				t.Fatal("an index with no source found what it was not told")
			}
			if x.Find(nil, b, "x.txt", "") != "U2" || !x.MayHave(nil, "x.txt", 3) {
				t.Fatal("an index with no source did not find what it was told")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, &FinishedIndex{}, newIndexStore())
		})
	}
}
