//go:build unix

package local

import (
	"context"
	"io"

	"github.com/attachctl/attachctl/ops/store"
)

// The step-by-step upload as the tests drive it on a store they opened: the backend's methods
// (backend.go), without a context, and a chunk written in pieces of at most max bytes (max <= 0:
// defaultChunk), so that a test can cut one small.

func (s *localStore) Begin(name string, size int64) (string, error) {
	return s.Backend().Begin(context.Background(), name, size)
}

func (s *localStore) Chunk(id string, offset int64, r io.Reader, max int64) (int64, error) {
	if max <= 0 {
		max = defaultChunk
	}
	return store.WriteChunk(context.Background(), chunker{s, max}, id, offset, r)
}

func (s *localStore) Status(id string) (*Status, error) {
	return s.Backend().Status(context.Background(), id)
}

func (s *localStore) Finish(id string, size int64, blake3 string) (*Meta, error) {
	return s.Backend().Finish(context.Background(), id, size, blake3)
}

func (s *localStore) Abort(id string) error { return s.Backend().Abort(context.Background(), id) }
