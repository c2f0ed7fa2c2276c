package sweeps_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/open"
	"github.com/attachctl/attachctl/ops/store/storetest"
	"github.com/attachctl/attachctl/ops/sweeps"
	"github.com/attachctl/attachctl/sweep"
)

var bg = context.Background()

// finished puts a finished upload of size bytes into b.
func finished(t *testing.T, b store.Backend, name string, size int) {
	t.Helper()
	id, err := b.Begin(bg, name, int64(size))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Write(bg, id, 0, strings.NewReader(strings.Repeat("x", size))); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Finish(bg, id, int64(size), ""); err != nil {
		t.Fatal(err)
	}
}

// everything is a sweep under which every finished upload made until now is stale.
var everything = sweep.Options{Before: time.Now().Add(time.Hour)}

// TestUnder: every store found is swept in turn under its own lock; one another sweep holds is
// skipped as held, one that cannot be opened fails, and neither stops the others. The removals
// name their store, and the total sums what each store did.
func TestUnder(t *testing.T) {
	type want struct {
		outcome sweeps.Outcome
		removed int
		code    fault.Code
	}
	for _, tc := range []struct {
		name    string
		stores  map[string]int // uploads of 3 bytes in each store, by dir
		held    string         // a store whose lock another sweep holds
		broken  string         // a store that cannot be opened
		dry     bool
		want    map[string]want
		swept   int
		total   int // uploads removed in all
		removed int // removals told, with their store
	}{
		{name: "every store swept", stores: map[string]int{"/r/a": 2, "/r/b": 1, "/r/c": 0},
			want:  map[string]want{"/r/a": {sweeps.Swept, 2, ""}, "/r/b": {sweeps.Swept, 1, ""}, "/r/c": {sweeps.Swept, 0, ""}},
			swept: 3, total: 3, removed: 3},
		{name: "a store held by another sweep", stores: map[string]int{"/r/a": 2, "/r/b": 1, "/r/c": 1}, held: "/r/b",
			want:  map[string]want{"/r/a": {sweeps.Swept, 2, ""}, "/r/b": {sweeps.Held, 0, fault.StoreLocked}, "/r/c": {sweeps.Swept, 1, ""}},
			swept: 2, total: 3, removed: 3},
		{name: "a store that cannot be opened", stores: map[string]int{"/r/a": 1, "/r/b": 1, "/r/c": 1}, broken: "/r/a",
			want:  map[string]want{"/r/a": {sweeps.Failed, 0, fault.StoreUnreachable}, "/r/b": {sweeps.Swept, 1, ""}, "/r/c": {sweeps.Swept, 1, ""}},
			swept: 2, total: 2, removed: 2},
		{name: "a dry run", stores: map[string]int{"/r/a": 2}, dry: true,
			want:  map[string]want{"/r/a": {sweeps.Swept, 2, ""}},
			swept: 1, total: 2, removed: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mems := map[string]*storetest.Mem{}
			var dirs []string
			for dir, n := range tc.stores {
				m := storetest.NewMem("mem:/" + dir)
				for i := range n {
					finished(t, m, fmt.Sprintf("f%d.txt", i), 3)
				}
				mems[dir] = m
			}
			for _, dir := range []string{"/r/a", "/r/b", "/r/c"} {
				if mems[dir] != nil {
					dirs = append(dirs, dir)
				}
			}
			if tc.held != "" {
				other, err := mems[tc.held].Sweep(bg, 0, false)
				if err != nil {
					t.Fatal(err)
				}
				defer other.Close()
			}
			opts := everything
			opts.DryRun = tc.dry
			var done []string
			got := map[string]sweeps.Store{}
			removedIn := map[string]int{}
			res, err := sweeps.Under(bg, "/r", sweeps.Options{
				Sweep: opts,
				Find:  func(string) ([]string, []store.Skip, error) { return dirs, nil, nil },
				Open: func(_ context.Context, dir string) (store.Backend, error) {
					if dir == tc.broken {
						return nil, fault.Errorf(fault.StoreUnreachable, "no way to %s", dir)
					}
					return mems[dir], nil
				},
				Removed: func(loc string, r sweep.Removed) error {
					removedIn[loc]++
					return nil
				},
				Done: func(st sweeps.Store) { done = append(done, st.Dir); got[st.Dir] = st },
			})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(done, " ") != strings.Join(dirs, " ") {
				t.Errorf("stores done %v, want each of %v in turn", done, dirs)
			}
			for dir, w := range tc.want {
				st := got[dir]
				if st.Outcome != w.outcome || st.Summary.Removed != w.removed || fault.CodeOf(st.Err) != w.code {
					t.Errorf("%s: outcome %d, removed %d, error %v; want outcome %d, removed %d, code %q",
						dir, st.Outcome, st.Summary.Removed, st.Err, w.outcome, w.removed, w.code)
				}
				if w.outcome == sweeps.Failed && !strings.Contains(st.Err.Error(), "no way to "+dir) {
					t.Errorf("%s: failure %v does not say why", dir, st.Err)
				}
				if w.outcome == sweeps.Swept && removedIn["mem:/"+dir] != w.removed {
					t.Errorf("%s: %d removals told with its location, want %d", dir, removedIn["mem:/"+dir], w.removed)
				}
				left, err := mems[dir].List(bg)
				if err != nil {
					t.Fatal(err)
				}
				wantLeft := tc.stores[dir]
				if w.outcome == sweeps.Swept && !tc.dry {
					wantLeft -= w.removed
				}
				if len(left.Entries) != wantLeft {
					t.Errorf("%s: %d uploads left, want %d", dir, len(left.Entries), wantLeft)
				}
			}
			n := 0
			for _, k := range removedIn {
				n += k
			}
			held, failed := 0, 0
			if tc.held != "" {
				held = 1
			}
			if tc.broken != "" {
				failed = 1
			}
			if res.Stores != len(dirs) || res.Swept != tc.swept || res.Held != held || res.Failed != failed ||
				res.Total.Removed != tc.total || res.Total.Bytes != int64(3*tc.total) || n != tc.removed {
				t.Errorf("result %+v with %d removals told; want %d stores, %d swept, %d held, %d failed, %d removed (%d bytes), %d told",
					res, n, len(dirs), tc.swept, held, failed, tc.total, 3*tc.total, tc.removed)
			}
		})
	}
}

// TestUnderInterrupted: once the context ends, the store being swept stops after the removal
// under way and is said to be interrupted, with what it removed; no store after it is begun.
func TestUnderInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	a, b := storetest.NewMem("mem://a"), storetest.NewMem("mem://b")
	for i := range 3 {
		finished(t, a, fmt.Sprintf("a%d", i), 3)
		finished(t, b, fmt.Sprintf("b%d", i), 3)
	}
	var done []sweeps.Store
	opened := 0
	res, err := sweeps.Under(ctx, "/r", sweeps.Options{
		Sweep: everything,
		Find:  func(string) ([]string, []store.Skip, error) { return []string{"a", "b"}, nil, nil },
		Open: func(_ context.Context, dir string) (store.Backend, error) {
			opened++
			return map[string]store.Backend{"a": a, "b": b}[dir], nil
		},
		Removed: func(string, sweep.Removed) error { cancel(); return nil },
		Done:    func(st sweeps.Store) { done = append(done, st) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 1 || done[0].Outcome != sweeps.Interrupted || !errors.Is(done[0].Err, context.Canceled) || done[0].Summary.Removed != 1 {
		t.Fatalf("stores done %+v, want a interrupted after one removal", done)
	}
	if opened != 1 || res.Total.Removed != 1 || res.Swept != 0 {
		t.Errorf("opened %d stores, result %+v; want b not begun, one removal in all", opened, res)
	}
	if l, _ := b.List(bg); len(l.Entries) != 3 {
		t.Errorf("b has %d uploads left, want its 3", len(l.Entries))
	}
}

// TestUnderFailureNamesItsStore: a store that fails says which store it is, whatever its error
// carries: an error with a code of its own (the store's) keeps that code and is named by the
// store's folder, as one without a code is. Wrapping a coded error and coding the whole
// returned the inner error and dropped the folder, so a line of many could not be told apart.
func TestUnderFailureNamesItsStore(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		code fault.Code
	}{
		{"a coded error", fault.Errorf(fault.StoreNotStore, "no store mark"), fault.StoreNotStore},
		{"a coded error wrapped", fmt.Errorf("opening: %w", fault.Errorf(fault.StoreUnreachable, "connection refused")), fault.StoreUnreachable},
		{"an error with no code", errors.New("connection refused"), fault.UploadUnreadable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dirs := []string{"/r/a b", "/r/c"}
			got := map[string]sweeps.Store{}
			res, err := sweeps.Under(bg, "/r", sweeps.Options{
				Sweep: everything,
				Find:  func(string) ([]string, []store.Skip, error) { return dirs, nil, nil },
				Open: func(_ context.Context, dir string) (store.Backend, error) {
					if dir == "/r/a b" {
						return nil, tc.err
					}
					return storetest.NewMem("mem:/" + dir), nil
				},
				Done: func(st sweeps.Store) { got[st.Dir] = st },
			})
			if err != nil || res.Failed != 1 || res.Swept != 1 {
				t.Fatalf("result %+v, %v; want one store failed and one swept", res, err)
			}
			st := got["/r/a b"]
			e := fault.AsError(st.Err, "")
			if st.Outcome != sweeps.Failed || e.Code != tc.code || e.Message != manifest.Quote("/r/a b")+": "+fault.AsError(tc.err, "").Message {
				t.Errorf("failure %q (%s), outcome %d; want %s naming /r/a b first", e.Message, e.Code, st.Outcome, tc.code)
			}
			if !errors.Is(st.Err, tc.err) {
				t.Errorf("failure %v does not keep its cause %v", st.Err, tc.err)
			}
		})
	}
}

// TestUnderRoot: what the walk could not read below root is told before any store is swept; a
// root that cannot be read is the error, with its code, and nothing is swept.
func TestUnderRoot(t *testing.T) {
	a := storetest.NewMem("mem://a")
	finished(t, a, "a", 3)
	var events []string
	_, err := sweeps.Under(bg, "/r", sweeps.Options{
		Sweep: everything,
		Find: func(string) ([]string, []store.Skip, error) {
			return []string{"a"}, []store.Skip{{Path: "/r/locked", Why: "permission denied"}}, nil
		},
		Open:    func(context.Context, string) (store.Backend, error) { return a, nil },
		Skipped: func(sk store.Skip) { events = append(events, "skipped "+sk.Path) },
		Done:    func(st sweeps.Store) { events = append(events, "done "+st.Dir) },
	})
	if err != nil || strings.Join(events, ", ") != "skipped /r/locked, done a" {
		t.Errorf("events %v (%v), want the skip told before the store", events, err)
	}
	_, err = sweeps.Under(bg, "/nothing", sweeps.Options{
		Sweep: everything,
		Find:  func(string) ([]string, []store.Skip, error) { return nil, nil, errors.New("/nothing: no such folder") },
		Open: func(context.Context, string) (store.Backend, error) {
			t.Error("a store was opened under a root that could not be read")
			return a, nil
		},
	})
	if fault.CodeOf(err) != fault.FileUnreadable || !strings.Contains(err.Error(), "/nothing: no such folder") {
		t.Errorf("error %v, want file.unreadable naming the root", err)
	}
}

// TestUnderFolders: with no Find or Open, the folder stores below root are found by their mark
// and opened as folders, a plain folder beside them left alone.
func TestUnderFolders(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a folder store does not open on Windows")
	}
	root := t.TempDir()
	for _, dir := range []string{root + "/chat-1", root + "/team/chat-2"} {
		b, err := open.Store(bg, dir, open.Options{})
		if err != nil {
			t.Fatal(err)
		}
		finished(t, b, "a.txt", 3)
	}
	var done []string
	res, err := sweeps.Under(bg, root, sweeps.Options{Sweep: everything, Done: func(st sweeps.Store) {
		done = append(done, strings.TrimPrefix(st.Dir, root)+fmt.Sprintf(" %d", st.Summary.Removed))
	}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(done, ", ") != "/chat-1 1, /team/chat-2 1" || res.Swept != 2 {
		t.Errorf("swept %v (%+v), want both folder stores", done, res)
	}
}
