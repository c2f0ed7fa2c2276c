package sniff

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
)

// yielded is one step of a walk: a path yielded (with its error's code), or one skipped (why).
type yielded struct {
	path string
	code fault.Code
	skip string
}

func walkAll(t *testing.T, opts WalkOptions, paths ...string) []yielded {
	t.Helper()
	var got []yielded
	opts.Skipped = func(p, why string) { got = append(got, yielded{path: p, skip: why}) }
	err := Walk(paths, opts, func(p string, err error) error {
		if err != nil && !strings.Contains(err.Error(), manifest.Quote(p)) && fault.CodeOf(err) != fault.FileBadName {
			t.Errorf("error for %s does not name it: %v", p, err)
		}
		got = append(got, yielded{path: p, code: fault.CodeOf(err)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func mustWrite(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(p), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestWalk(t *testing.T) {
	root := t.TempDir()
	d := filepath.Join(root, "d")
	// Created out of order; yielded in lexical order.
	for _, n := range []string{"zeta.txt", "b/2.txt", "Alpha.txt", "b/10.txt", "a.txt", "b/c/deep.txt"} {
		mustWrite(t, filepath.Join(d, n))
	}
	if err := os.MkdirAll(filepath.Join(d, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("a.txt", filepath.Join(d, "link-to-file")))
	must(os.Symlink("..", filepath.Join(d, "b", "up")))     // back to d: not followed, so no loop
	must(mkfifo(filepath.Join(d, "b", "c", "fifo"), 0o644)) // never opened
	must(os.Symlink(d, filepath.Join(root, "dlink")))
	loopA, loopB := filepath.Join(root, "loopA"), filepath.Join(root, "loopB")
	must(os.Symlink(loopB, loopA))
	must(os.Symlink(loopA, loopB))
	single := filepath.Join(root, "single.txt")
	mustWrite(t, single)

	got := walkAll(t, WalkOptions{}, single, d, filepath.Join(root, "missing"), loopA, filepath.Join(root, "dlink"), filepath.Join(d, "empty"))
	j := func(p ...string) string { return filepath.Join(p...) }
	const fifo, link = "a FIFO; not read", "a symlink inside a folder; not followed"
	want := []yielded{
		{path: single},
		{path: j(d, "Alpha.txt")},
		{path: j(d, "a.txt")},
		{path: j(d, "b", "10.txt")},
		{path: j(d, "b", "2.txt")},
		{path: j(d, "b", "c", "deep.txt")},
		{path: j(d, "b", "c", "fifo"), skip: fifo},
		{path: j(d, "b", "up"), skip: link},
		{path: j(d, "link-to-file"), skip: link},
		{path: j(d, "zeta.txt")},
		{path: j(root, "missing"), code: fault.FileMissing},
		{path: loopA, code: fault.FileUnreadable},
		// the symlink argument is followed; paths below it keep the name given
		{path: j(root, "dlink", "Alpha.txt")},
		{path: j(root, "dlink", "a.txt")},
		{path: j(root, "dlink", "b", "10.txt")},
		{path: j(root, "dlink", "b", "2.txt")},
		{path: j(root, "dlink", "b", "c", "deep.txt")},
		{path: j(root, "dlink", "b", "c", "fifo"), skip: fifo},
		{path: j(root, "dlink", "b", "up"), skip: link},
		{path: j(root, "dlink", "link-to-file"), skip: link},
		{path: j(root, "dlink", "zeta.txt")},
		// the empty folder yields nothing
	}
	if len(got) != len(want) {
		t.Fatalf("got %d paths, want %d:\n%v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("#%d: got %v, want %v", i, got[i], want[i])
		}
	}
}

func TestWalkStops(t *testing.T) {
	d := t.TempDir()
	for _, n := range []string{"a", "b", "c"} {
		mustWrite(t, filepath.Join(d, n))
	}
	stop := errors.New("stop")
	var seen []string
	err := Walk([]string{d, d}, WalkOptions{}, func(p string, err error) error {
		seen = append(seen, filepath.Base(p))
		if len(seen) == 2 {
			return stop
		}
		return nil
	})
	if err != stop || strings.Join(seen, ",") != "a,b" {
		t.Errorf("Walk returned %v after %v, want stop after a,b", err, seen)
	}
}

func TestWalkUnreadableFolder(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads folders whatever their mode")
	}
	d := t.TempDir()
	locked := filepath.Join(d, "locked")
	mustWrite(t, filepath.Join(locked, "inside"))
	mustWrite(t, filepath.Join(d, "z"))
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(locked, 0o755)
	got := walkAll(t, WalkOptions{}, d)
	want := []yielded{{path: locked, code: fault.FileUnreadable}, {path: filepath.Join(d, "z")}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("got %v, want %v", got, want)
	}
}

// What a folder walk leaves out, and what it does not: the skips are told in walk order, between
// the files, and a path named as an argument is never skipped by its name.
func TestWalkSkips(t *testing.T) {
	const vcs, finder = "version-control metadata", "Finder metadata"
	tests := []struct {
		name    string
		files   []string // made under the folder
		exclude []string
		args    []string // relative to the folder; default the folder itself
		want    []yielded
	}{
		{name: "version control and Finder metadata",
			files: []string{"a.txt", ".git/HEAD", ".git/objects/ab/cd", "sub/.hg/store", "sub/.svn/x", "sub/b.txt", ".DS_Store", "sub/.DS_Store", ".gitignore"},
			want: []yielded{
				{path: ".DS_Store", skip: finder},
				{path: ".git", skip: vcs},
				{path: ".gitignore"},
				{path: "a.txt"},
				{path: "sub/.DS_Store", skip: finder},
				{path: "sub/.hg", skip: vcs},
				{path: "sub/.svn", skip: vcs},
				{path: "sub/b.txt"},
			}},
		{name: "a .git that is a file (a worktree's) is left out too",
			files: []string{"wt/.git", "wt/main.go"},
			want:  []yielded{{path: "wt/.git", skip: vcs}, {path: "wt/main.go"}}},
		{name: "--exclude globs match names, files and folders, at any depth",
			files:   []string{"a.log", "b.txt", "node_modules/x/y.js", "sub/c.log", "sub/d.txt", "sub/node_modules/z.js"},
			exclude: []string{"*.log", "node_modules"},
			want: []yielded{
				{path: "a.log", skip: `excluded by *.log`},
				{path: "b.txt"},
				{path: "node_modules", skip: `excluded by node_modules`},
				{path: "sub/c.log", skip: `excluded by *.log`},
				{path: "sub/d.txt"},
				{path: "sub/node_modules", skip: `excluded by node_modules`},
			}},
		{name: "paths named as arguments are walked whatever their name",
			files:   []string{".git/HEAD", ".git/.git", "x.log", "keep/.DS_Store"},
			exclude: []string{"*.log"},
			args:    []string{".git", "x.log", "keep/.DS_Store"},
			want:    []yielded{{path: ".git/.git", skip: vcs}, {path: ".git/HEAD"}, {path: "x.log"}, {path: "keep/.DS_Store"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := t.TempDir()
			for _, f := range tt.files {
				mustWrite(t, filepath.Join(d, f))
			}
			args := []string{d}
			if tt.args != nil {
				args = nil
				for _, a := range tt.args {
					args = append(args, filepath.Join(d, a))
				}
			}
			got := walkAll(t, WalkOptions{Exclude: tt.exclude}, args...)
			for i := range got {
				got[i].path, _ = filepath.Rel(d, got[i].path)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v\nwant %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("#%d: got %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// A path that is not UTF-8 in any part is yielded with file.badName, shown with U+FFFD for each
// bad byte, in its place among the others; its message says to rename it and names the rule.
func TestWalkBadNames(t *testing.T) {
	d := t.TempDir()
	for _, f := range []string{"a.txt", "caf\xe9.txt", "d\xff\xfe/in.txt", "z.txt"} {
		mustWrite(t, filepath.Join(d, f))
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(mkfifo(filepath.Join(d, "fifo\xe9"), 0o644)) // skipped before its name matters
	var msgs []string
	var got []yielded
	err := Walk([]string{d, filepath.Join(d, "gone\xe9")}, WalkOptions{Skipped: func(p, why string) {
		got = append(got, yielded{path: p, skip: why})
	}}, func(p string, err error) error {
		got = append(got, yielded{path: p, code: fault.CodeOf(err)})
		if err != nil {
			msgs = append(msgs, err.Error())
		}
		return nil
	})
	must(err)
	j := filepath.Join
	want := []yielded{
		{path: j(d, "a.txt")},
		{path: j(d, "caf\uFFFD.txt"), code: fault.FileBadName},
		{path: j(d, "d\uFFFD\uFFFD", "in.txt"), code: fault.FileBadName},
		{path: j(d, "fifo\xe9"), skip: "a FIFO; not read"},
		{path: j(d, "z.txt")},
		{path: j(d, "gone\uFFFD"), code: fault.FileBadName}, // badName before file.missing
	}
	if len(got) != len(want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("#%d: got %v, want %v", i, got[i], want[i])
		}
	}
	wantMsgs := []string{
		`"` + d + `/caf\xe9.txt": not valid UTF-8, so no manifest can name it; rename the file (` + manifest.PlainRule + `) (file.badName)`,
		`"` + d + `/d\xff\xfe/in.txt": not valid UTF-8, so no manifest can name it; rename its folder (` + manifest.PlainRule + `) (file.badName)`,
		`"` + d + `/gone\xe9": not valid UTF-8, so no manifest can name it; rename the file (` + manifest.PlainRule + `) (file.badName)`,
	}
	if strings.Join(msgs, "\n") != strings.Join(wantMsgs, "\n") {
		t.Errorf("messages:\n%s\nwant:\n%s", strings.Join(msgs, "\n"), strings.Join(wantMsgs, "\n"))
	}
}

func TestCheckExclude(t *testing.T) {
	for _, tt := range []struct {
		glob string
		ok   bool
	}{
		{"*.log", true}, {"node_modules", true}, {"[abc]?.tmp", true}, {"a\\*b", true},
		{"[", false}, {"a[b", false}, {"sub/*.log", false}, {"/abs", false},
	} {
		if err := CheckExclude([]string{"*.ok", tt.glob}); (err == nil) != tt.ok {
			t.Errorf("%q: got %v, want ok %v", tt.glob, err, tt.ok)
		} else if err != nil && !strings.Contains(err.Error(), tt.glob) {
			t.Errorf("%q: error %v does not name it", tt.glob, err)
		}
	}
}

func TestReadPaths(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		nul      bool
		want     []string
	}{
		{"lines", "a.txt\nsub dir/b c.txt\n", false, []string{"a.txt", "sub dir/b c.txt"}},
		{"empty lines skipped, last without newline", "\na\n\n\nb", false, []string{"a", "b"}},
		{"nothing else trimmed", " a \r\n\tb\n", false, []string{" a \r", "\tb"}},
		{"bytes kept as they are", "caf\xe9.txt\n", false, []string{"caf\xe9.txt"}},
		{"NUL-separated, newlines inside names", "a\nb\x00c\x00\x00d", true, []string{"a\nb", "c", "d"}},
		{"empty", "", false, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			if err := ReadPaths(strings.NewReader(tt.in), tt.nul, func(p string) error {
				got = append(got, p)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	stop := errors.New("stop")
	n := 0
	if err := ReadPaths(strings.NewReader("a\nb\nc\n"), false, func(string) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("fn's error: got %v after %d paths", err, n)
	}
}

// TestWalkAvoid: a folder in Avoid (the store) is never entered, wherever it stands and however
// it is named: by another path to it, or made only while the walk goes on. It is told to Skipped
// once, and nothing under it is yielded.
func TestWalkAvoid(t *testing.T) {
	const why = "the store"
	d := t.TempDir()
	for _, f := range []string{"a.txt", "b/c.txt", "b/st/.attachctl/store", "b/st/x/y.bin", "z/late.txt"} {
		mustWrite(t, filepath.Join(d, f))
	}
	link := filepath.Join(t.TempDir(), "via")
	if err := os.Symlink(filepath.Join(d, "b"), link); err != nil {
		t.Fatal(err)
	}
	rel := func(got []yielded) []yielded {
		for i := range got {
			got[i].path, _ = filepath.Rel(d, got[i].path)
		}
		return got
	}
	same := func(t *testing.T, got, want []yielded) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("got %v\nwant %v", got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("#%d: got %v, want %v", i, got[i], want[i])
			}
		}
	}
	t.Run("named by another path", func(t *testing.T) {
		got := rel(walkAll(t, WalkOptions{Avoid: []Avoid{{filepath.Join(link, "st"), why}}}, d))
		same(t, got, []yielded{{path: "a.txt"}, {path: "b/c.txt"}, {path: "b/st", skip: why}, {path: "z/late.txt"}})
	})
	t.Run("the folder named is the store", func(t *testing.T) {
		got := rel(walkAll(t, WalkOptions{Avoid: []Avoid{{filepath.Join(d, "b", "st"), why}}}, filepath.Join(d, "b", "st")))
		same(t, got, []yielded{{path: "b/st", skip: why}})
	})
	t.Run("made while the walk goes on", func(t *testing.T) {
		store := filepath.Join(d, "z", "st") // in a folder the walk has not read yet
		var got []yielded
		opts := WalkOptions{Avoid: []Avoid{{store, why}}, Skipped: func(p, why string) { got = append(got, yielded{path: p, skip: why}) }}
		err := Walk([]string{d}, opts, func(p string, err error) error {
			if filepath.Base(p) == "a.txt" { // the first file: the upload makes its store now
				mustWrite(t, filepath.Join(store, ".attachctl", "store"))
			}
			got = append(got, yielded{path: p})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		same(t, rel(got), []yielded{{path: "a.txt"}, {path: "b/c.txt"}, {path: "b/st/.attachctl/store"}, {path: "b/st/x/y.bin"}, {path: "z/late.txt"}, {path: "z/st", skip: why}})
	})
	t.Run("nothing to avoid walks everything", func(t *testing.T) {
		got := rel(walkAll(t, WalkOptions{}, filepath.Join(d, "b")))
		same(t, got, []yielded{{path: "b/c.txt"}, {path: "b/st/.attachctl/store"}, {path: "b/st/x/y.bin"}})
	})
}

func TestJoinRel(t *testing.T) {
	for _, c := range []struct{ p, parent, name, want string }{
		{"root/a/b/f.txt", "a/b", "f.txt", "a/b/f.txt"},
		{"a/b/f.txt", "a/b", "f.txt", "a/b/f.txt"},
		{`root\a\f.txt`, "a", "f.txt", "a/f.txt"}, // Windows: the path's separator is not rel's
		{"f.txt", "a", "f.txt", "a/f.txt"},
		{"root/x/f.txt", "a", "f.txt", "a/f.txt"},
	} {
		if got := joinRel(c.p, c.parent, c.name); got != c.want {
			t.Errorf("joinRel(%q, %q, %q) = %q, want %q", c.p, c.parent, c.name, got, c.want)
		}
	}
}

// TestWalkRelAnyRoot walks one tree through every spelling of its root that the walk's shortcut
// for a folder's rel (parentRelOf) does not take as it is: the rels must not depend on it.
func TestWalkRelAnyRoot(t *testing.T) {
	d := t.TempDir()
	for _, f := range []string{"top.txt", "a/x.txt", "a/b/y.txt", "a/b/c/z.txt", "e/w.txt"} {
		mustWrite(t, filepath.Join(d, "t", f))
	}
	if err := os.Symlink(filepath.Join(d, "t"), filepath.Join(d, "link")); err != nil {
		t.Skip("no symlinks here:", err)
	}
	want := []string{"a/b/c/z.txt", "a/b/y.txt", "a/x.txt", "e/w.txt", "top.txt"}
	t.Chdir(d)
	for _, root := range []string{"t", "t/", "t//", "./t", "t/../t", filepath.Join(d, "t"), "link", "link/"} {
		var got []string
		err := WalkEntries([]string{root}, WalkOptions{Each: true}, func(e Entry) error {
			if e.Err != nil {
				t.Errorf("%s: %v", root, e.Err)
			}
			got = append(got, e.Rel)
			return nil
		})
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("walk of %q: rels %q (%v), want %q", root, got, err, want)
		}
	}
	t.Chdir(filepath.Join(d, "t"))
	var got []string
	WalkEntries([]string{"."}, WalkOptions{Each: true}, func(e Entry) error { got = append(got, e.Rel); return nil })
	if !slices.Equal(got, want) {
		t.Errorf("walk of \".\": rels %q, want %q", got, want)
	}
}
