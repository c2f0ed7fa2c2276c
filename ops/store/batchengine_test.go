package store

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// fakeCommits is the smallest GroupCommitter: a built upload is its id, weighing 1 unless
// heavy names it; what it keeps for a commit is the ids joined, so that a test sees that what
// joined with an upload goes with the same commit.
type fakeCommits struct {
	mu       sync.Mutex
	heavy    map[string]int   // weight by id (default 1)
	fail     map[string]error // the commit's error by id
	refuse   map[string]error // BatchJoin's error by id
	gate     chan struct{}    // when set, a commit waits for a receive from it
	commits  [][]string       // the ids of each commit, in order
	groups   [][]string       // what each commit was given besides
	idle     int
	running  atomic.Int32
	overlaps atomic.Int32 // commits that ran while another did
}

func newFakeCommits() *fakeCommits {
	return &fakeCommits{heavy: map[string]int{}, fail: map[string]error{}, refuse: map[string]error{}}
}

func (f *fakeCommits) BatchItem(id string) (string, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if w := f.heavy[id]; w > 0 {
		return id, w
	}
	return id, 1
}

func (f *fakeCommits) BatchJoin(g *[]string, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.refuse[id]; err != nil {
		return err
	}
	*g = append(*g, id)
	return nil
}

func (f *fakeCommits) BatchCommit(ids []string, g []string) []error {
	if f.running.Add(1) > 1 {
		f.overlaps.Add(1)
	}
	defer f.running.Add(-1)
	if f.gate != nil {
		<-f.gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.commits = append(f.commits, slices.Clone(ids))
	f.groups = append(f.groups, g)
	errs := make([]error, len(ids))
	for i, id := range ids {
		errs[i] = f.fail[id]
	}
	return errs
}

func (f *fakeCommits) BatchIdle() {
	f.mu.Lock()
	f.idle++
	f.mu.Unlock()
}

func (f *fakeCommits) committed() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.commits)
}

// build is a worker's build of id through the batch: claimed, then added.
func build(t *testing.T, b *GroupBatch[string, []string], sum, id string) {
	t.Helper()
	if got := b.Claim(sum, "f", id); got != id {
		t.Fatalf("claim of %s gave %s", id, got)
	}
	if err := b.Add(id); err != nil {
		t.Fatal(err)
	}
}

// returns runs f on a goroutine and reports whether it returned within a short while; its result
// comes on the channel.
func returns(f func() error) (bool, chan error) {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	select {
	case err := <-ch:
		ch <- err
		return true, ch
	case <-time.After(50 * time.Millisecond): // a wait for something that must not happen
		return false, ch
	}
}

// Settle: when it commits, what it waits for, and that every upload built by then goes in the
// same commit.
func TestGroupBatchSettle(t *testing.T) {
	type step func(t *testing.T, b *GroupBatch[string, []string], more *atomic.Bool)
	cases := []struct {
		name   string
		before step // with a Settle of "a" running when it returns and a built
		wait   bool // Settle must not return after before
		after  step // then Settle must return
		want   [][]string
	}{
		{
			name:   "nothing more on its way: commits what is built",
			before: func(t *testing.T, b *GroupBatch[string, []string], _ *atomic.Bool) { build(t, b, "s2", "b") },
			want:   [][]string{{"a", "b"}},
		},
		{
			name: "more says more are coming: waits, then one commit",
			before: func(t *testing.T, b *GroupBatch[string, []string], more *atomic.Bool) {
				more.Store(true)
			},
			wait: true,
			after: func(t *testing.T, b *GroupBatch[string, []string], more *atomic.Bool) {
				build(t, b, "s2", "b")
				build(t, b, "s3", "c")
				more.Store(false)
				b.Wake()
			},
			want: [][]string{{"a", "b", "c"}},
		},
		{
			name: "a stream into the batch is running: waits for its upload",
			before: func(t *testing.T, b *GroupBatch[string, []string], _ *atomic.Bool) {
				b.Enter()
			},
			wait: true,
			after: func(t *testing.T, b *GroupBatch[string, []string], _ *atomic.Bool) {
				build(t, b, "s2", "b")
				b.Leave()
			},
			want: [][]string{{"a", "b"}},
		},
		{
			name: "full: commits on its own, however many are coming",
			before: func(t *testing.T, b *GroupBatch[string, []string], more *atomic.Bool) {
				more.Store(true)
			},
			wait: true,
			after: func(t *testing.T, b *GroupBatch[string, []string], _ *atomic.Bool) {
				build(t, b, "s2", "b")
				build(t, b, "s3", "c")
				build(t, b, "s4", "d") // the fourth: full
			},
			want: [][]string{{"a", "b", "c", "d"}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeCommits()
			b := NewGroupBatch[string, []string](nil, f, 4)
			var more atomic.Bool
			b.SetMore(more.Load)
			build(t, b, "s1", "a")
			c.before(t, b, &more)
			done, ch := returns(func() error { return b.Settle("a") })
			if done == c.wait {
				t.Fatalf("Settle returned %v, want %v", done, !c.wait)
			}
			if c.wait {
				if got := f.committed(); len(got) != 0 {
					t.Fatalf("committed %v while Settle waited", got)
				}
				c.after(t, b, &more)
			}
			select {
			case err := <-ch:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Settle still waits")
			}
			b.Quiet()
			if got := f.committed(); !slices.EqualFunc(got, c.want, slices.Equal) {
				t.Fatalf("commits %v, want %v", got, c.want)
			}
			if !slices.EqualFunc(f.groups, c.want, slices.Equal) {
				t.Fatalf("commits were given %v, want what joined with their uploads %v", f.groups, c.want)
			}
			if err := b.Settle("a"); err != nil { // committed: nothing to wait for
				t.Fatal(err)
			}
			if err := b.Commit(); err != nil {
				t.Fatal(err)
			}
			if got := f.committed(); len(got) != len(c.want) {
				t.Fatalf("Commit of nothing committed: %v", got)
			}
		})
	}
}

// Two workers that built the same BLAKE3 and name at once make one upload: one claim wins, every
// worker names it, and a Settle of it waits until it is built and committed.
func TestGroupBatchClaim(t *testing.T) {
	for round := range 20 {
		f := newFakeCommits()
		b := NewGroupBatch[string, []string](nil, f, 100)
		const workers = 8
		got := make([]string, workers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range workers {
			wg.Go(func() {
				<-start
				id := fmt.Sprintf("id%d", i)
				if got[i] = b.Claim("same", "f", id); got[i] == id {
					time.Sleep(time.Millisecond) // the build
					if err := b.Add(id); err != nil {
						t.Error(err)
					}
				}
				if err := b.Settle(got[i]); err != nil {
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		for _, id := range got[1:] {
			if id != got[0] {
				t.Fatalf("round %d: workers name %v, want one upload", round, got)
			}
		}
		if c := f.committed(); len(c) != 1 || !slices.Equal(c[0], got[:1]) {
			t.Fatalf("round %d: commits %v, want one of %s", round, c, got[0])
		}
		if b.Find("same", "f") != got[0] || b.Find("same", "g") != "" || b.Find("other", "f") != "" {
			t.Fatalf("Find does not give the one claimed upload of these bytes and name only")
		}
	}
}

// What a Settle and a Commit return: an upload's error once to its stream (Drop) or to every
// Settle of it, and from Commit only what no Settle returned, once.
func TestGroupBatchErrors(t *testing.T) {
	full := fault.Errorf(fault.UploadDiskFull, "no room")
	placed := fault.Errorf(fault.UploadUnreadable, "not placed")
	f := newFakeCommits()
	f.fail["b"], f.fail["c"] = placed, placed
	b := NewGroupBatch[string, []string](nil, f, 100)

	// Dropped while a Settle waits for it: that Settle gets the error; a later claim builds anew.
	if b.Claim("sx", "f", "x") != "x" {
		t.Fatal("claim of new bytes")
	}
	done, ch := returns(func() error { return b.Settle("x") })
	if done {
		t.Fatalf("Settle returned %v while the upload was building", <-ch)
	}
	b.Drop("sx", "f", "x", full)
	if err := <-ch; !errors.Is(err, full) {
		t.Fatalf("Settle of a dropped upload: %v", err)
	}
	if b.Claim("sx", "f", "y") != "y" {
		t.Fatal("the bytes of a dropped upload are claimed by the next build")
	}
	b.Drop("sx", "f", "y", full)

	// Kept out by the backend (BatchJoin): not taken, nothing joined.
	f.refuse["z"] = full
	b.Claim("sz", "f", "z")
	if err := b.Add("z"); !errors.Is(err, full) {
		t.Fatalf("Add of a refused upload: %v", err)
	}
	b.Drop("sz", "f", "z", full)

	build(t, b, "sa", "a")
	build(t, b, "sb", "b")
	build(t, b, "sc", "c")
	if err := b.Settle("b"); !errors.Is(err, placed) {
		t.Fatalf("Settle of an upload whose commit failed: %v", err)
	}
	if err := b.Settle("b"); !errors.Is(err, placed) { // a later record of the same file
		t.Fatalf("second Settle: %v", err)
	}
	if err := b.Settle("unknown"); err != nil {
		t.Fatalf("Settle of an id the batch never held: %v", err)
	}
	// c failed too, and no Settle returned it: Commit does, once; x, y, z and b it does not.
	if err := b.Commit(); !errors.Is(err, placed) || fmt.Sprint(err) != fmt.Sprint(placed) {
		t.Fatalf("Commit: %v, want c's error alone", err)
	}
	if err := b.Commit(); err != nil {
		t.Fatalf("second Commit: %v", err)
	}
	if c := f.committed(); len(c) != 1 || !slices.Equal(c[0], []string{"a", "b", "c"}) || !slices.Equal(f.groups[0], c[0]) {
		t.Fatalf("commits %v given %v, want a, b and c once", c, f.groups)
	}
}

// Commits are one at a time: a full batch committing on its own and a Settle's commit of the next
// do not overlap, and Commit waits for both. Commit tells the backend the batch is idle only once
// no stream into it runs.
func TestGroupBatchCommitsOneAtATime(t *testing.T) {
	f := newFakeCommits()
	f.gate = make(chan struct{})
	b := NewGroupBatch[string, []string](nil, f, 2)
	build(t, b, "s1", "a")
	build(t, b, "s2", "b") // full: its commit waits at the gate
	build(t, b, "s3", "c")
	settled, ch := returns(func() error { return b.Settle("c") })
	if settled {
		t.Fatalf("Settle returned %v while its commit waited", <-ch)
	}
	b.Enter() // a stream still running when Commit is called
	committed, cch := returns(b.Commit)
	if committed {
		t.Fatalf("Commit returned %v while a commit waited", <-cch)
	}
	f.gate <- struct{}{}
	f.gate <- struct{}{}
	if err := <-ch; err != nil {
		t.Fatal(err)
	}
	if err := <-cch; err != nil {
		t.Fatal(err)
	}
	if n := f.overlaps.Load(); n != 0 {
		t.Fatalf("%d commits ran while another did", n)
	}
	c := f.committed()
	slices.SortFunc(c, func(x, y []string) int { return len(y) - len(x) }) // either may go first
	if len(c) != 2 || !slices.Equal(c[0], []string{"a", "b"}) || !slices.Equal(c[1], []string{"c"}) {
		t.Fatalf("commits %v, want a and b, and c", c)
	}
	if f.idle != 0 {
		t.Fatal("idle while a stream into the batch ran")
	}
	b.Leave()
	f.gate = nil
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if f.idle != 1 {
		t.Fatalf("idle told %d times after the last Commit, want once", f.idle)
	}
}

// fakeBuild is a GroupBuilder, failing with err when set; it counts what it built and took apart.
type fakeBuild struct {
	err            error
	built, unbuilt int
}

func (w *fakeBuild) BatchBuild(id, _ string) (string, error) {
	if w.err != nil {
		return "", w.err
	}
	w.built++
	return id, nil
}

func (w *fakeBuild) BatchUnbuild(string, error) { w.unbuilt++ }

// Build: a stream whose bytes another worker claimed builds nothing and names that upload; a
// build that fails, or that the backend keeps out, gives the claim up with its error (taken apart
// when it was built), and the next stream of the same bytes builds its own.
func TestGroupBatchBuild(t *testing.T) {
	full := fault.Errorf(fault.UploadDiskFull, "no room")
	cases := []struct {
		name              string
		claimed           bool  // another worker claimed the bytes first
		buildErr, joinErr error // the build's, BatchJoin's
		wantID            string
		wantErr           error
		built, unbuilt    int
	}{
		{name: "new bytes: built and added", wantID: "mine", built: 1},
		{name: "claimed by another worker: named, nothing built", claimed: true, wantID: "other"},
		{name: "the build fails: the claim is given up", buildErr: full, wantErr: full},
		{name: "kept out by the backend: taken apart, the claim given up", joinErr: full, wantErr: full, built: 1, unbuilt: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeCommits()
			f.refuse["mine"] = c.joinErr
			b := NewGroupBatch[string, []string](nil, f, 100)
			if c.claimed {
				build(t, b, "s", "other")
			}
			w := &fakeBuild{err: c.buildErr}
			id, err := b.Build("s", "f", "mine", w)
			if id != c.wantID || !errors.Is(err, c.wantErr) || w.built != c.built || w.unbuilt != c.unbuilt {
				t.Fatalf("Build: %q, %v, built %d, taken apart %d", id, err, w.built, w.unbuilt)
			}
			settled := make(chan error, 1)
			go func() { settled <- b.Settle("mine") }()
			select {
			case err := <-settled:
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("Settle of the stream's own upload: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Settle waits for an upload whose build ended")
			}
			if c.wantErr != nil {
				again := &fakeBuild{}
				if id, err := b.Build("s", "f", "again", again); id != "again" || err != nil || again.built != 1 {
					t.Fatalf("a stream after a failed build: %q, %v", id, err)
				}
			}
			if err := b.Commit(); err != nil { // a failed build is its stream's error, not Commit's
				t.Fatal(err)
			}
		})
	}
}
