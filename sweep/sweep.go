// Package sweep is the sweep policy over a store, in three tiers with a cutoff each: unfinished
// uploads last written before theirs, finished uploads never used and made before theirs, and used
// uploads made and last used before theirs. Which uploads are stale is
// decided here; how an upload is re-checked and removed safely (against a use or a writer racing
// the sweep, without following links or leaving the store) is the backend's, through the
// store.Backend seam, so the same policy sweeps a local folder and an S3 bucket.
package sweep

import (
	"context"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// Options of one sweep. A cutoff is a time: an upload of its tier older than it (strictly before
// it) is stale. A zero cutoff sweeps nothing of its tier; Before is the cutoff of every tier whose
// own one is zero (`--older-than` sets all three, a tier's own flag overrides it).
type Options struct {
	Before     time.Time     // every tier's cutoff, unless the tier has its own
	Unfinished time.Time     // unfinished uploads: last written before it, and no process writing them
	Unused     time.Time     // finished uploads never used: made before it
	Used       time.Time     // finished uploads used: made and last used before it
	DryRun     bool          // report what would be removed, remove nothing, write nothing
	Wait       time.Duration // how long to wait for another sweep to end
}

// cutoffs are the three tiers' cutoffs with Before filled in.
func (o Options) cutoffs() (unfinished, unused, used time.Time) {
	pick := func(t time.Time) time.Time {
		if t.IsZero() {
			return o.Before
		}
		return t
	}
	return pick(o.Unfinished), pick(o.Unused), pick(o.Used)
}

// Stale is the policy of these options: whether e is to be removed.
func (o Options) Stale(e store.Entry) bool {
	unfinished, unused, used := o.cutoffs()
	switch {
	case e.Busy:
		return false
	case !e.Finished:
		return !e.LastUsed.IsZero() && e.LastUsed.Before(unfinished)
	case e.LastUsed.IsZero():
		return e.Made.Before(unused)
	default:
		return e.Made.Before(used) && e.LastUsed.Before(used)
	}
}

// Removed is one upload removed (or that would be, in a dry run): one JSON line on output.
// Times are RFC 3339 in UTC; lastUsed is null for an upload never used. For an unfinished upload,
// size is the bytes written so far, made is when it was begun, and lastUsed when it was last
// written.
type Removed struct {
	ID       string  `json:"id"`
	Name     string  `json:"name"`
	Size     int64   `json:"size"`
	Finished bool    `json:"finished"`
	Made     *string `json:"made"`
	LastUsed *string `json:"lastUsed"`
}

// Skip is an entry the sweep left because it does not recognise it.
type Skip = store.Skip

// Summary is what a sweep did.
type Summary struct {
	Removed int     // uploads removed (or that would be)
	Bytes   int64   // their bytes
	Kept    int     // uploads kept: used, made or written since the cutoff, or being written
	Skipped []Skip  // entries not recognised, left in place
	Failed  []error // removals that failed
}

// Stale is the policy with one cutoff for every tier: a finished upload made and last used (if
// ever) before it, or an unfinished one last written before it that no process is writing.
func Stale(e store.Entry, before time.Time) bool { return Options{Before: before}.Stale(e) }

// Run sweeps the store b. It returns store.locked when another sweep holds the store past
// opts.Wait. Failed removals are in the summary; emit is called once per upload removed, after
// its removal is done. When ctx is cancelled the sweep stops after the removals under way, having
// reported each, and returns ctx.Err(). An error from emit stops the sweep.
func Run(ctx context.Context, b store.Backend, opts Options, emit func(Removed) error) (Summary, error) {
	return remove(ctx, b, opts.Wait, opts.DryRun, opts.Stale, nil, emit)
}

// remove takes the store's sweep hold, lists it, removes what killed runs left (the listing's
// leftovers), then what stale says through the backend's Sweeper, and reports each removal to
// emit. check, when set, sees the listing first and may refuse the run (rm: an id that is not a
// finished upload).
func remove(ctx context.Context, b store.Backend, wait time.Duration, dry bool, stale func(store.Entry) bool,
	check func(*store.Listing) error, emit func(Removed) error) (Summary, error) {
	var sum Summary
	sw, err := b.Sweep(ctx, wait, dry)
	if err != nil {
		return sum, err
	}
	defer sw.Close()
	l, err := b.List(ctx)
	if err != nil {
		return sum, err
	}
	// What killed runs left is removed first (not in a dry run). One that cannot be stays for
	// the next sweep; a store that does not answer stops this one.
	for i := 0; i < len(l.Leftovers) && !dry; i++ {
		if err := sw.DropLeftover(ctx, l.Leftovers[i]); fault.CodeOf(err) == fault.StoreUnreachable {
			return sum, err
		}
	}
	if check != nil {
		if err := check(l); err != nil {
			return sum, err
		}
	}
	sum.Skipped = l.Skipped
	var cands []store.Entry
	for _, e := range l.Entries {
		if stale(e) {
			cands = append(cands, e)
		} else {
			sum.Kept++
		}
	}
	err = sw.Remove(ctx, cands, stale, func(e store.Entry, o store.Outcome, err error) error {
		switch o {
		case store.Removed:
			sum.Removed++
			sum.Bytes += e.Size
			return emit(removed(e))
		case store.Kept:
			sum.Kept++
		case store.Failed:
			sum.Failed = append(sum.Failed, err)
		}
		return nil
	})
	return sum, err
}

// removed is the output line of a removed entry.
func removed(e store.Entry) Removed {
	return Removed{ID: e.ID, Name: e.Name, Size: e.Size, Finished: e.Finished, Made: stamp(e.Made), LastUsed: stamp(e.LastUsed)}
}

// stamp formats a time for a Removed line.
func stamp(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}
