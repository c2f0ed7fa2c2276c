package s3

import (
	"context"
	"time"

	"github.com/attachctl/attachctl/ops/store"
)

// SweepLease is how long a sweep's hold counts without being renewed: the sweep that runs renews
// it every SweepLease/4, so a sweep killed with kill -9 frees the store within SweepLease, and
// a cron sweep finds it free the next time it runs.
var SweepLease = 2 * time.Minute

// Sweep takes the store's sweep lock (store.Lease), renewed while the sweep runs; the sweep's
// rules, the tombstone that sets a finished upload aside and the order of the deletes, are
// store.ObjectSweeper's over the store's objects. A dry run writes nothing, the lock included.
func (s *Store) Sweep(ctx context.Context, wait time.Duration, dryRun bool) (store.Sweeper, error) {
	return s.up.Sweep(ctx, s.removal, objects{s}, SweepLease, wait, dryRun)
}
