package s3

import (
	"context"
)

// Exists reports whether the prefix is a store: its mark is there. A prefix that holds nothing
// is a store that does not exist yet (verify, ls, rm, touch and resolve exit 10 on it); one
// that holds other objects is store.notStore.
func (s *Store) Exists(ctx context.Context) (bool, error) {
	return s.checkStore(ctx, false)
}
