package s3

import (
	"context"
	"time"

	"github.com/attachctl/attachctl/ops/store"
)

// The reservations are small objects (store.ObjectReserver): P/.attachctl/reserved/<id>, created
// If-None-Match: *. The limits lock is a lease (store.Lease)
// P/.attachctl/limits.lock. A server may let two create-only writes that race both succeed
// (versitygw's posix backend checks, then writes): so Unlock reads the lock back, and a holder
// that does not find its own nonce there lost the lock while it held it, and what it wrote under
// it is undone and done again. Two holders that both find their own nonce held it at times apart,
// so the later one counted what the earlier reserved.

// limitsLease is how long the limits lock holds without being renewed: a check renews it while
// it runs (store.Lease), so a killed upload frees the store within it.
var limitsLease = 30 * time.Second

// lockLimits takes the limits lock (store.Lease), held while one upload is checked and
// renewed meanwhile: the check lists the store, which may take longer than the lease.
func (s *Store) lockLimits(ctx context.Context, wait time.Duration) (store.LimitsLock, error) {
	l := store.NewLease(objects{s}, s.URI, "limits", limitsLease, true)
	if err := l.Take(ctx, wait, 5*time.Millisecond, 200*time.Millisecond, "", "its holder"); err != nil {
		return nil, err
	}
	return l, nil
}
