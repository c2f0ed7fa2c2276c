package store

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// The sweep's re-check, written once over a backend's primitives (prim.go says why).
//
// The policy, which uploads are stale, is the caller's (package sweep): it comes in as stale and
// no backend decides it. What is the store's rule, and so here: every candidate is read again
// under the backend's exclusion against uses and writers (SweepBackend.Exclude), a busy one or
// one the policy no longer calls stale is Kept, one that went away is Gone, and only then is it
// set aside (Doom: a rename into a trash; a tombstone written conditionally) and removed (Drop),
// outside the exclusion so that a use waits for one batch at most. Once the sweep is cancelled,
// no further removal starts, and what was set aside and not started is put back (Restore) where
// the backend can; where it cannot, the decision stands and the removal is finished, so that what
// is reported Removed is what is gone.

// SweepProperties are what a backend's sweep can do, declared once by the backend.
type SweepProperties struct {
	// Batch is how many candidates are re-checked per hold of the exclusion (at least 1).
	Batch int
	// Jobs is how many set-aside entries are removed at once (at least 1).
	Jobs int
	// Undo: Restore can put back an entry that Doom set aside, so a cancelled sweep leaves the
	// entries it had not started removing as they were. Without it every doomed entry is dropped.
	Undo bool
}

// SweepItem is a candidate as the engine re-checked it, for Doom, Drop and Restore.
type SweepItem struct {
	Entry Entry // the fresh entry: what stale is asked about and what is reported
	Note  any   // Reread.Note
}

// Reread is what SweepBackend.Recheck read of a candidate again: only what a use or a writer
// changes since the listing. The engine makes the fresh entry of it (a finished upload's last
// use; an unfinished one's entry by the listing's rule, UnfinishedEntry).
type Reread struct {
	Used  time.Time       // a finished upload's last use now (zero: never)
	State UnfinishedState // an unfinished upload's state now, as ListBackend.ReadPartial reads it
	// Decided: a sweep that died set it aside already (S3's tombstone): its decision stands and
	// stale is not asked again.
	Decided bool
	// Release drops what Recheck holds until the entry is set aside (a writer's lock), or nil.
	Release func()
	// Note is the backend's own, from Recheck to Doom, Drop and Restore.
	Note any
}

// ErrSweepKept is Doom's answer when a use or a writer won the race for the entry: it is Kept.
var ErrSweepKept = errors.New("used or written since it was re-read")

// SweepBackend is what a backend implements so that the sweep's re-check, written once in this
// package (SweepRemove), runs over it. Its methods are called by one goroutine, except Drop, which
// runs on SweepProperties.Jobs goroutines at once.
type SweepBackend interface {
	SweepProperties() SweepProperties
	// Exclude holds back uses and writers while a batch is re-checked and set aside (a lock
	// file; nothing on a backend whose Doom is itself conditional). An error stops the sweep (a
	// lease lost).
	Exclude(ctx context.Context) (release func(), err error)
	// Recheck reads the candidate c again as the store holds it now. An error is the entry's
	// failure (Failed), not the sweep's, except upload.missing, which says it is Gone: not there
	// any more: removed, or, an unfinished one, finished or aborted since it was listed (what a
	// finish leaves of its partial is no upload to report). Release is honoured with an error.
	Recheck(ctx context.Context, c Entry) (Reread, error)
	// Doom sets the item aside for removal: after it, no use finds it. ErrSweepKept: a use won.
	Doom(ctx context.Context, it *SweepItem) error
	// Drop removes what Doom set aside; it may refresh it.Entry (the last use it really had).
	// ctx is not cancelled: a decided removal is finished.
	Drop(ctx context.Context, it *SweepItem) error
	// Restore puts back an item Doom set aside and Drop never saw (SweepProperties.Undo).
	Restore(it *SweepItem)
}

// SweepRemove is Sweeper.Remove (backend.go) over b: see there. A dry run re-checks and decides
// as a sweep does and changes nothing (neither Exclude nor Doom is called).
func SweepRemove(ctx context.Context, b SweepBackend, dry bool, cands []Entry, stale func(Entry) bool, each func(Entry, Outcome, error) error) error {
	p := b.SweepProperties()
	for len(cands) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(max(p.Batch, 1), len(cands))
		doomed, err := decide(ctx, b, dry, cands[:n], stale, each)
		cands = cands[n:]
		if rerr := removeDoomed(ctx, b, p, doomed, each); err == nil {
			err = rerr
		}
		if err != nil {
			return err
		}
	}
	return ctx.Err()
}

// recheck reads c again and decides: Removed (to be set aside), Kept, Gone or Failed. What is
// Kept or Removed is reported as it.Entry; what is Gone or failed here, as c was listed. release
// is Reread.Release (never nil).
func recheck(ctx context.Context, b SweepBackend, c Entry, stale func(Entry) bool) (it *SweepItem, o Outcome, release func(), err error) {
	r, err := b.Recheck(ctx, c)
	it, release = &SweepItem{Entry: c, Note: r.Note}, r.Release
	if release == nil {
		release = func() {}
	}
	switch {
	case fault.CodeOf(err) == fault.UploadMissing:
		return it, Gone, release, nil
	case err != nil:
		return it, Failed, release, err
	case c.Finished:
		it.Entry.LastUsed = r.Used
	default:
		it.Entry = UnfinishedEntry(c.ID, r.State)
	}
	if it.Entry.Busy || !r.Decided && !stale(it.Entry) {
		return it, Kept, release, nil
	}
	return it, Removed, release, nil
}

// decide holds the exclusion for one batch: re-checks each candidate, reports those that stay and
// sets aside the rest, which it returns. It stops deciding when ctx is cancelled. A dry run holds
// nothing and sets nothing aside: what would be removed is reported Removed at once.
func decide(ctx context.Context, b SweepBackend, dry bool, batch []Entry, stale func(Entry) bool, each func(Entry, Outcome, error) error) ([]*SweepItem, error) {
	if !dry {
		release, err := b.Exclude(ctx)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	var doomed []*SweepItem
	for _, c := range batch {
		if ctx.Err() != nil {
			break
		}
		it, o, release, err := recheck(ctx, b, c, stale)
		c = it.Entry
		if o == Removed && !dry {
			if err = b.Doom(ctx, it); err == nil {
				doomed = append(doomed, it)
			} else if errors.Is(err, ErrSweepKept) {
				o, err = Kept, nil
			} else {
				o = Failed
			}
		}
		release()
		if o != Removed || dry {
			if err := each(c, o, err); err != nil {
				return doomed, err
			}
		}
	}
	return doomed, nil
}

// removeDoomed drops the doomed items, p.Jobs at once, and reports each when it is done. Once ctx
// is cancelled no further removal starts (with p.Undo): the removals under way end and are
// reported, and the items not started are put back. An error from each stops the reports, not
// the removals under way.
func removeDoomed(ctx context.Context, b SweepBackend, p SweepProperties, doomed []*SweepItem, each func(Entry, Outcome, error) error) error {
	if len(doomed) == 0 {
		return nil
	}
	type done struct {
		i   int
		err error
	}
	stop := ctx.Done()
	if !p.Undo {
		stop = nil // what is set aside cannot be put back: every removal is finished
	}
	dctx := context.WithoutCancel(ctx)
	next := make(chan int) // unbuffered: nothing is queued past a cancellation
	results := make(chan done)
	var wg sync.WaitGroup
	for w := 0; w < min(max(p.Jobs, 1), len(doomed)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results <- done{i, b.Drop(dctx, doomed[i])}
			}
		}()
	}
	started := 0
	go func() {
		defer close(next)
		for ; started < len(doomed); started++ {
			select {
			case next <- started:
			case <-stop:
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()
	var ferr error
	for r := range results {
		o := Removed
		if r.err != nil {
			o = Failed
		}
		if ferr == nil {
			ferr = each(doomed[r.i].Entry, o, r.err)
		}
	}
	// Every worker has ended, so started is final: put back what was not started.
	for _, it := range doomed[started:] {
		b.Restore(it)
	}
	return ferr
}
