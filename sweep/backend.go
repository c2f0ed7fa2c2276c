package sweep

import (
	"context"

	"github.com/attachctl/attachctl/ops/store"
)

// RunBackend sweeps a store through the store seam (an S3 store): under the backend's sweep hold
// it lists the store once, then hands the stale entries to the backend's Sweeper, which decides
// each again from what the store says now, with the same policy, before it removes it. Failed
// removals are in the summary; emit is called once per upload removed, in id order.
func RunBackend(ctx context.Context, b store.Backend, opts Options, emit func(Removed) error) (Summary, error) {
	var sum Summary
	sw, err := b.Sweep(ctx, opts.Wait)
	if err != nil {
		return sum, err
	}
	l, err := b.List(ctx)
	if err != nil {
		sw.Close()
		return sum, err
	}
	for _, sk := range l.Skipped {
		sum.Skipped = append(sum.Skipped, Skip{Path: sk.Path, Why: sk.Why})
	}
	stale := func(e store.Entry) bool {
		return !e.Busy && e.Made.Before(opts.Before) && (e.LastUsed.IsZero() || e.LastUsed.Before(opts.Before))
	}
	var cands []store.Entry
	for _, e := range l.Entries {
		if stale(e) {
			cands = append(cands, e)
		} else {
			sum.Kept++
		}
	}
	err = sw.Remove(ctx, cands, stale, opts.DryRun, func(e store.Entry, o store.Outcome, err error) error {
		switch o {
		case store.Removed:
			sum.Removed++
			sum.Bytes += e.Size
			return emit(Removed{ID: e.ID, Name: e.Name, Size: e.Size, Finished: e.Finished, Made: stamp(e.Made), LastUsed: stamp(e.LastUsed)})
		case store.Kept:
			sum.Kept++
		case store.Failed:
			sum.Failed = append(sum.Failed, err)
		}
		return nil
	})
	if cerr := sw.Close(); err == nil {
		err = cerr
	}
	return sum, err
}
