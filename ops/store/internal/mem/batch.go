package mem

import (
	"bytes"
	"context"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// batchFull is how many uploads a batch holds before it commits them on its own.
const batchFull = 64

// batch is the in-memory store's Batch: the group commit of store.GroupBatch, whose rules (when
// a commit happens, what Settle waits for, one upload of the same bytes built twice at once) the
// conformance suite then tests on this store as on the local one. A commit publishes each upload
// the batch holds, unless it was removed meanwhile.
type batch struct {
	*store.GroupBatch[*batched, struct{}]
	s *Store
}

// batched is an upload written and held for the batch's commit, with its BLAKE3.
type batched struct {
	id  string
	p   *partial
	sum string
}

// NewBatch is a group of uploads published together (store.Batcher).
func (s *Store) NewBatch(ctx context.Context) (store.Batch, error) {
	b := &batch{s: s}
	b.GroupBatch = store.NewGroupBatch[*batched, struct{}](s, b, batchFull)
	b.BuildsSmall(s.quota, b)
	return b, nil
}

// BuildSmall keeps a small source's bytes as an unfinished upload held for the batch's commit
// (store.SmallBuilder).
func (b *batch) BuildSmall(id, name, sum string, data []byte) (*batched, error) {
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkStore(true); err != nil {
		return nil, err
	}
	now := s.now()
	p := &partial{name: name, size: int64(len(data)), made: now, written: now, data: bytes.Clone(data), holds: 1}
	s.partials[id] = p
	return &batched{id: id, p: p, sum: sum}, nil
}

// UnbuildSmall removes the upload kept out of the batch.
func (b *batch) UnbuildSmall(u *batched) {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	if b.s.partials[u.id] == u.p {
		delete(b.s.partials, u.id)
	}
}

// BatchItem, BatchJoin and BatchIdle are store.GroupCommitter's: every upload weighs one, and
// the store keeps nothing for a commit or for the batch.
func (b *batch) BatchItem(u *batched) (string, int)  { return u.id, 1 }
func (b *batch) BatchJoin(*struct{}, *batched) error { return nil }
func (b *batch) BatchIdle()                          {}

// BatchCommit publishes each of ups, releasing the hold of the write that made it.
func (b *batch) BatchCommit(ups []*batched, _ struct{}) []error {
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	errs := make([]error, len(ups))
	for i, u := range ups {
		u.p.holds--
		if s.partials[u.id] != u.p {
			errs[i] = fault.Errorf(fault.UploadMissing, "upload %s: removed before its batch was committed", u.id)
			continue
		}
		s.publish(u.id, u.p, u.sum)
	}
	return errs
}
