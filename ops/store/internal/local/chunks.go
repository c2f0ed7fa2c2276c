//go:build unix

package local

import (
	"context"
	"io"

	"github.com/attachctl/attachctl/ops/store"
)

// The local store's primitives of the step-by-step upload (store.ChunkBackend): a chunk is
// appended to the partial's data file under its lock, in pieces of at most max bytes, cut back
// when refused, and fdatasynced; a finish hashes the file and publishes it in one rename.
type chunker struct {
	s   *localStore
	max int64 // the most bytes read and written at once
}

// ChunkProperties: a chunk is streamed into the file, never held whole. A finished upload's
// leftover partial (a finish that crashed after its rename) is removed.
func (c chunker) ChunkProperties() store.ChunkProperties {
	return store.ChunkProperties{Finished: c.s.Info, DropLeftover: func(_ context.Context, id string) error {
		return c.s.removePartial(id, false)
	}}
}

// OpenChunks locks the unfinished upload id, waiting for a process that writes it.
func (c chunker) OpenChunks(ctx context.Context, id string) (store.ChunkUpload, *store.Info, error) {
	p, err := c.s.lockPartial(id, false)
	if err != nil {
		return nil, nil, err
	}
	cur, err := p.size()
	if err != nil {
		p.close()
		return nil, nil, err
	}
	return &chunkUp{p: p, max: c.max, st: p.meta.Of().ChunkState(p.meta.Size, cur)}, nil, nil
}

func (c chunker) ChunkQuota() *store.Quota { return c.s.quota }

type chunkUp struct {
	p   *partial
	max int64
	st  store.ChunkState
}

func (u *chunkUp) State() store.ChunkState { return u.st }
func (u *chunkUp) Close()                  { u.p.close() }

// Append writes r at cur piece by piece (store.CopyChunk); a refusal or an error cuts data back
// to cur.
func (u *chunkUp) Append(ctx context.Context, cur int64, r io.Reader, limit int64, over func(int64) error) (int64, error) {
	p := u.p
	n, err := store.CopyChunk(p.id, r, make([]byte, u.max), limit, over, func(b []byte, off int64) error {
		_, err := p.f.WriteAt(b, cur+off)
		return wrap(p.f.Name(), err)
	})
	if err == nil {
		err = wrap(p.f.Name(), fdatasync(int(p.f.Fd())))
	}
	if err != nil {
		p.truncate(cur)
		return cur, err
	}
	return cur + n, nil
}

// Drop removes the partial, still locked, durably: an abort is not undone by a crash.
func (u *chunkUp) Drop(ctx context.Context) error { return u.p.remove(true) }

// Publish hashes data and publishes the partial in one rename (finish.go).
func (u *chunkUp) Publish(ctx context.Context, check func(string) error) (*store.Info, bool, error) {
	sum, err := hashFile(u.p.f, u.st.Offset)
	if err != nil {
		return nil, false, err
	}
	if err := check(sum); err != nil {
		return nil, false, err
	}
	m, err := u.p.publish(u.st.Offset, sum)
	return m, false, err
}
