package store

import (
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
)

// TestJudge: what a location is, from what a backend saw there; anything that is not a store is
// refused in the one wording, naming the first of what it holds by name.
func TestJudge(t *testing.T) {
	const id = "01900000-0000-7000-8000-000000000000"
	dir := func(n string) TopEntry { return TopEntry{Name: n, Dir: true} }
	file := func(n string) TopEntry { return TopEntry{Name: n} }
	for _, c := range []struct {
		name string
		seen Seen
		want Verdict
		held string // the refusal names it ("": no refusal)
	}{
		{"nothing there", Seen{}, NotThere, ""},
		{"an empty folder", Seen{There: true}, Empty, ""},
		{"the mark", Seen{There: true, Mark: true, Names: []TopEntry{dir(InternalDir)}}, Marked, ""},
		{"the mark, nothing else read", Seen{Mark: true}, Marked, ""},
		{"the internal folder without a mark", Seen{There: true, Names: []TopEntry{dir(InternalDir)}}, LaidOut, ""},
		{"an upload folder", Seen{There: true, Names: []TopEntry{file("notes.txt"), dir(id)}}, LaidOut, ""},
		{"a file named as the internal folder", Seen{There: true, Names: []TopEntry{file(InternalDir)}}, 0, InternalDir},
		{"a file named as an upload id", Seen{There: true, Names: []TopEntry{file(id)}}, 0, id},
		{"a folder not named as an upload id", Seen{There: true, Names: []TopEntry{dir("src"), file("README")}}, 0, "README"},
		{"a folder first by name", Seen{There: true, Names: []TopEntry{file("b.txt"), dir("a")}}, 0, "a/"},
		{"a prefix's own folder object", Seen{Names: []TopEntry{file("")}}, 0, `""`},
		{"a name to quote", Seen{Names: []TopEntry{file("a\nb")}}, 0, `"a\nb"`},
	} {
		got, err := Judge("/x", c.seen)
		if c.held == "" {
			if err != nil || got != c.want {
				t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
			}
			continue
		}
		want := "store /x: is not an attachctl store: it holds " + c.held + ", and no .attachctl/store mark and no upload; nothing was written to it"
		if fault.CodeOf(err) != fault.StoreNotStore || fault.AsError(err, "").Message != want {
			t.Errorf("%s: %v; want store.notStore %q", c.name, err, want)
		}
	}
}

// TestMarks: a store's internal folder marks it by the mark as a file, or by an earlier version's
// partial folder; the same names of the other kind (or anything else) do not.
func TestMarks(t *testing.T) {
	type entry struct {
		name string
		dir  bool
	}
	for _, c := range []struct {
		has  []entry
		want bool
	}{
		{nil, false},
		{[]entry{{MarkName, false}}, true},
		{[]entry{{PartialDir, true}}, true},
		{[]entry{{MarkName, true}}, false},
		{[]entry{{PartialDir, false}}, false},
		{[]entry{{"trash", true}, {"lock", false}}, false},
	} {
		got := Marks(func(name string, dir bool) bool {
			for _, e := range c.has {
				if e == (entry{name, dir}) {
					return true
				}
			}
			return false
		})
		if got != c.want {
			t.Errorf("Marks with %v = %v, want %v", c.has, got, c.want)
		}
	}
}
