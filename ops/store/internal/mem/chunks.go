package mem

import (
	"context"
	"io"

	"github.com/attachctl/attachctl/ops/store"
)

// The in-memory store's primitives of the step-by-step upload (store.ChunkBackend): a chunk is
// appended to a slice, checked again under the store's mutex.

// ChunkProperties: a chunk is kept in one append, read whole first; a publish leaves nothing
// unfinished behind.
func (s *Store) ChunkProperties() store.ChunkProperties {
	return store.ChunkProperties{Buffer: true, Finished: s.Info}
}

// OpenChunks takes up the unfinished upload id.
func (s *Store) OpenChunks(ctx context.Context, id string) (store.ChunkUpload, *store.Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkStore(false); err != nil {
		return nil, nil, err
	}
	p := s.partials[id]
	if p == nil {
		return nil, nil, store.NotUnfinished(id, s.loc)
	}
	st := store.PartialOf{Name: p.name, Folder: p.folder, Streamed: p.note != ""}.ChunkState(p.size, p.bytes())
	return &chunkUp{s: s, id: id, p: p, st: st}, nil, nil
}

func (s *Store) ChunkQuota() *store.Quota { return s.quota }

type chunkUp struct {
	s  *Store
	id string
	p  *partial
	st store.ChunkState
}

func (u *chunkUp) State() store.ChunkState { return u.st }
func (u *chunkUp) Close()                  {}

// Append keeps the chunk, unless another writer moved the upload meanwhile.
func (u *chunkUp) Append(ctx context.Context, cur int64, r io.Reader, limit int64, over func(int64) error) (int64, error) {
	b, err := store.ReadChunk(u.id, r, limit, over)
	if err != nil {
		return cur, err
	}
	s := u.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.partials[u.id] != u.p || int64(len(u.p.data)) != cur {
		if s.partials[u.id] != u.p {
			return cur, s.missing(u.id)
		}
		return int64(len(u.p.data)), store.OffsetErr(u.id, cur, int64(len(u.p.data)))
	}
	u.p.data = append(u.p.data[:cur:cur], b...)
	u.p.written = s.now()
	return int64(len(u.p.data)), nil
}

// Drop removes the unfinished upload, unless it was finished or removed meanwhile.
func (u *chunkUp) Drop(ctx context.Context) error {
	s := u.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.partials[u.id] != u.p {
		return s.missing(u.id)
	}
	s.drop(u.id, u.p)
	return nil
}

// Publish hashes the bytes and publishes them, unless a finish came first.
func (u *chunkUp) Publish(ctx context.Context, check func(string) error) (*store.Info, bool, error) {
	s := u.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.finished[u.id]; f != nil {
		info := f.info
		return &info, true, nil
	}
	if s.partials[u.id] != u.p {
		return nil, false, s.missing(u.id)
	}
	got := hexSum(u.p.data)
	if err := check(got); err != nil {
		return nil, false, err
	}
	info := s.publish(u.id, u.p, got)
	return &info, false, nil
}
