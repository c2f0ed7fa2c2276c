//go:build unix

package local

import (
	"context"

	"github.com/attachctl/attachctl/ops/store"
)

// The local store's primitives of the step-by-step upload (store.ChunkBackend): the partial's
// data file under its lock (store.DataChunks), written in pieces of at most max bytes and
// fdatasynced; a finish publishes it in one rename.
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
	up, err := store.DataChunks(chunkData{p}, c.max)
	return up, nil, err
}

func (c chunker) ChunkQuota() *store.Quota { return c.s.quota }

// chunkData is the partial as the step-by-step upload holds it (store.HeldData).
type chunkData struct{ *partial }

func (d chunkData) Size() (int64, error)                       { return d.size() }
func (d chunkData) Sync() error                                { return wrap(d.f.Name(), fdatasync(int(d.f.Fd()))) }
func (d chunkData) Truncate(n int64) error                     { return d.truncate(n) }
func (d chunkData) Hash(n int64) (string, error)               { return hashFile(d.f, n) }
func (d chunkData) Publish(n int64, sum string) (*Meta, error) { return d.publish(n, sum) }
func (d chunkData) Remove() error                              { return d.remove(true) }

func (d chunkData) WriteAt(b []byte, off int64) error {
	_, err := d.f.WriteAt(b, off)
	return wrap(d.f.Name(), err)
}
