//go:build unix

package local

import (
	"context"
	"io"
	"time"

	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// openStore returns the store at dir (New), opened as its first call would (create: as an
// upload, making or marking it).
func openStore(dir string, create bool) (*localStore, error) {
	b, _ := New(dir)
	s := b.(*localStore)
	if err := s.open(create); err != nil {
		return nil, err
	}
	return s, nil
}

// LastUsed returns when upload id was last used: its .used marker's mtime, and false when it has
// never been used. The marker is never followed if it is a link.
func (s *localStore) LastUsed(id string) (time.Time, bool, error) {
	if err := store.ValidID(id); err != nil {
		return time.Time{}, false, err
	}
	dirfd, err := s.openDir(guardErr(id), false, id)
	if err != nil {
		return time.Time{}, false, err
	}
	defer unix.Close(dirfd)
	at, _, err := uploadFolder{s, dirfd, id}.LastUsed()
	return at, !at.IsZero(), err
}

// Chunk writes a chunk as Write does, in pieces of at most max bytes (max <= 0: defaultChunk), so
// that a test can cut one small.
func (s *localStore) Chunk(id string, offset int64, r io.Reader, max int64) (int64, error) {
	if max <= 0 {
		max = defaultChunk
	}
	return store.WriteChunk(context.Background(), chunker{s, max}, id, offset, r)
}
