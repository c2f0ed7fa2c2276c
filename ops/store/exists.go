package store

import "context"

// Exister is a backend that can tell a store that does not exist from an empty one (local: no
// folder there; S3: no store mark under the prefix, which holds nothing until the first upload).
// sweep, ls and verify --all take both as empty, and say which, so that a typo in a crontab's
// --store is seen in cron's mail instead of succeeding silently forever. Optional: a backend
// without it is taken to exist.
type Exister interface {
	Exists(ctx context.Context) (bool, error)
}
