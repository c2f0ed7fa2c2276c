package store

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
)

// fakeTree is a tree of folders for StoresUnder's walk, by path relative to the root ("" the
// root): what each folder is, as a backend's primitive would say it.
type fakeTree map[string]fakeDir

type fakeDir struct {
	store   bool
	fs      int   // its file system
	listErr error // Subfolders fails after listing what it has
	openErr error // opening it fails
	gone    bool  // listed by its parent, then no folder when opened
}

// fakeWalk is one walk over a fakeTree: it counts the folders open, so that a test sees each
// closed.
type fakeWalk struct {
	t    fakeTree
	open int
	seen []string // every folder opened, in order
}

type fakeFolder struct {
	w   *fakeWalk
	rel string
}

func (w *fakeWalk) openRel(rel string) (UnderFolder, error) {
	d, ok := w.t[rel]
	switch {
	case !ok && rel == "":
		return nil, fs.ErrNotExist
	case !ok || d.gone:
		return nil, nil
	case d.openErr != nil:
		return nil, d.openErr
	}
	w.open++
	w.seen = append(w.seen, rel)
	return &fakeFolder{w: w, rel: rel}, nil
}

func (f *fakeFolder) IsStore() bool { return f.w.t[f.rel].store }

func (f *fakeFolder) Subfolders() ([]string, error) {
	var names []string
	for p := range f.w.t {
		if p != "" && filepath.Dir("/"+p) == filepath.Clean("/"+f.rel) {
			names = append(names, filepath.Base(p))
		}
	}
	return names, f.w.t[f.rel].listErr
}

func (f *fakeFolder) Open(name string) (UnderFolder, error) {
	return f.w.openRel(strings.TrimPrefix(f.rel+"/"+name, "/"))
}

func (f *fakeFolder) FileSystem() (any, error) { return f.w.t[f.rel].fs, nil }

func (f *fakeFolder) Close() { f.w.open-- }

// TestStoresUnderWalk: the walk's rules on a fake backend: a store is found and not looked into,
// another file system is not entered, what cannot be listed or opened is skipped and named (and
// what was listed still looked into), a folder gone meanwhile is passed over in silence; stores
// come in lexical order of their paths, and every folder opened is closed.
func TestStoresUnderWalk(t *testing.T) {
	denied := errors.New("permission denied")
	for _, c := range []struct {
		name    string
		tree    fakeTree
		stores  []string // relative to the root
		skipped []Skip   // paths relative to the root
		notSeen []string // folders the walk must not open
	}{
		{name: "root a store", tree: fakeTree{"": {store: true}, "inner": {store: true}},
			stores: []string{""}, notSeen: []string{"inner"}},
		{name: "nested", tree: fakeTree{"": {}, "b": {store: true}, "b/in": {store: true}, "a": {}, "a/x": {}, "a/x/s": {store: true}, "a-b": {store: true}},
			stores: []string{"a-b", "a/x/s", "b"}, notSeen: []string{"b/in"}},
		{name: "other file system", tree: fakeTree{"": {}, "m": {fs: 1}, "m/s": {store: true}, "t": {store: true}},
			stores: []string{"t"}, notSeen: []string{"m/s"}},
		{name: "unreadable", tree: fakeTree{"": {}, "locked": {openErr: denied}, "half": {listErr: denied}, "half/s": {store: true}, "gone": {gone: true}},
			stores: []string{"half/s"}, skipped: []Skip{{Path: "half", Why: "permission denied"}, {Path: "locked", Why: "permission denied"}}},
		{name: "none", tree: fakeTree{"": {}, "a": {}, "a/b": {}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			abs := func(rel string) string { return filepath.Join(root, rel) }
			w := &fakeWalk{t: c.tree}
			stores, skipped, err := StoresUnder(root, func(a string) (UnderFolder, error) {
				if a != root {
					t.Errorf("root opened as %q, want %q", a, root)
				}
				return w.openRel("")
			})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, s := range c.stores {
				want = append(want, abs(s))
			}
			if !slices.Equal(stores, want) {
				t.Errorf("stores %q, want %q", stores, want)
			}
			var wantSkip []Skip
			for _, s := range c.skipped {
				wantSkip = append(wantSkip, Skip{Path: abs(s.Path), Why: s.Why})
			}
			if !slices.Equal(skipped, wantSkip) {
				t.Errorf("skipped %v, want %v", skipped, wantSkip)
			}
			for _, n := range c.notSeen {
				if slices.Contains(w.seen, n) {
					t.Errorf("%s opened, and must not be", n)
				}
			}
			if w.open != 0 {
				t.Errorf("%d folders left open", w.open)
			}
		})
	}
}

// TestStoresUnderRoot: a root that is not there is file.missing, one that cannot be read
// file.unreadable, and a backend's refusal (a coded error) comes back as it is.
func TestStoresUnderRoot(t *testing.T) {
	refused := fault.Errorf(fault.StoreUnreachable, "no folder stores here")
	for _, c := range []struct {
		err  error
		code fault.Code
	}{
		{fs.ErrNotExist, fault.FileMissing},
		{errors.New("permission denied"), fault.FileUnreadable},
		{refused, fault.StoreUnreachable},
	} {
		_, _, err := StoresUnder(t.TempDir(), func(string) (UnderFolder, error) { return nil, c.err })
		if fault.CodeOf(err) != c.code {
			t.Errorf("root failing with %v: %v, want %s", c.err, err, c.code)
		}
	}
}
