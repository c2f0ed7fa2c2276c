//go:build unix

package local

import (
	"context"
	"io"
	"path/filepath"
	"time"

	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// Backend returns s as a store.Backend.
func (s *localStore) Backend() *backend {
	b, _ := New(s.Dir)
	l := b.(*backend)
	l.s.Store(s)
	return l
}

// LastUsed returns when upload id was last used: its .used marker's mtime, and false when it has
// never been used. The marker is never followed if it is a link.
func (s *localStore) LastUsed(id string) (time.Time, bool, error) {
	if err := store.ValidID(id); err != nil {
		return time.Time{}, false, err
	}
	dirfd, err := s.openUploadDir(id)
	if err != nil {
		return time.Time{}, false, err
	}
	defer unix.Close(dirfd)
	return lastUsedAt(dirfd, filepath.Join(s.UploadDir(id), UsedName))
}

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
