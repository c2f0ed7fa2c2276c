package sweep

import (
	"context"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// Remove is `attachctl rm`: it removes the finished uploads ids, whatever their age, under the
// same hold and through the same re-check and removal as a sweep (no link followed, nothing
// outside the store removed). Every id is checked before anything is removed: one that is not a
// finished upload of the store refuses the whole call (upload.missing; upload.invalid for an
// unfinished upload, which `upload abort` removes) and nothing is removed. emit is called once
// per upload removed, after its removal is done.
func Remove(ctx context.Context, b store.Backend, ids []string, wait time.Duration, dryRun bool, emit func(Removed) error) (Summary, error) {
	want := map[string]bool{}
	for _, id := range ids {
		if err := store.ValidID(id); err != nil {
			return Summary{}, err
		}
		want[id] = true
	}
	check := func(l *store.Listing) error {
		seen := map[string]bool{}
		for _, e := range l.Entries {
			if !want[e.ID] {
				continue
			}
			if !e.Finished {
				return fault.Errorf(fault.UploadInvalid, "upload %s: not finished (remove an unfinished upload with `attachctl upload abort --id %s`); nothing removed", e.ID, e.ID)
			}
			seen[e.ID] = true
		}
		for _, id := range ids {
			if !seen[id] {
				return fault.Errorf(fault.UploadMissing, "upload %s: not a finished upload in store %s; nothing removed", id, b.Location())
			}
		}
		return nil
	}
	stale := func(e store.Entry) bool { return e.Finished && want[e.ID] }
	sum, err := remove(ctx, b, wait, dryRun, stale, check, emit)
	sum.Kept = 0 // the other uploads were never candidates
	return sum, err
}
