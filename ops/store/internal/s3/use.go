package s3

import (
	"context"
	"time"
)

// MarkUsed marks finished uploads used at at (store.ObjectUploads.MarkUsed): the ids looked up in
// few listings, then each marker replaced by a conditional write.
func (s *Store) MarkUsed(ctx context.Context, ids []string, at time.Time) error {
	return s.up.MarkUsed(ctx, ids, at)
}
