//go:build unix

package local

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

var _ store.Backend = (*localStore)(nil)

// New returns the local store at dir as a store.Backend, with the Features below. Nothing is read or written yet: the folder is judged at the first call, and only an upload
// makes or marks it. It is the one way into a local store from outside this package. On Windows
// it refuses (local_windows.go).
func New(dir string, opts ...Option) (store.Backend, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fault.Errorf(fault.UploadInvalid, "store %s: %v", dir, err)
	}
	s := &localStore{Dir: abs}
	s.OpenCalls = store.OpenCalls{OpenLoc: s.open, Calls: calls{s}}
	// Its limits: read from the mark once; each upload is admitted by a reservation taken under
	// the store's limits lock, so that uploads of many processes at once never pass a limit.
	s.quota = &store.Quota{R: reserver(s), M: marker(s), List: s.List, Wait: o.limitsWait,
		Loc: s.Dir, MarkAt: s.internal(store.MarkName)}
	s.TreesOn = store.TreesOpened(s.open, s)
	s.FoldersOn = func() (store.UploadFolders, error) { return s, s.open(false) }
	return s, nil
}

// Features: the local store's uploads are files on this machine, and it has every ability the
// seam knows but its own chunk sizes.
func (s *localStore) Features() store.Features {
	return store.Features{Pather: s, Exister: s, Limiter: s.quota, Checker: s, Trees: s, Streamer: s, Batcher: s, Moder: s}
}

// Location is the store's absolute folder.
func (s *localStore) Location() string { return s.Dir }

// calls are the store's Backend calls once it is open (store.OpenCalls, embedded in localStore,
// checks what each is given and opens the store first).
type calls struct{ *localStore }

// Begin starts an unfinished upload named name of size bytes (-1: open, fixed at Finish) and
// returns its new id. Its offset is 0.
func (s calls) Begin(ctx context.Context, name string, size int64) (string, error) {
	p, err := s.BeginPartial(partialMeta{Name: name, Size: size})
	if err != nil {
		return "", err
	}
	p.close()
	return p.id, nil
}

// Write appends what r holds to the unfinished upload id (store.WriteChunk): read to its end in
// pieces of at most defaultChunk bytes, each written as it comes; a full disk is upload.diskFull,
// and after any error the data is cut back to offset, so nothing of a refused chunk is kept and no
// byte past the declared size is ever written. The new offset is durable (fsynced) when Write
// returns.
func (s calls) Write(ctx context.Context, id string, offset int64, r io.Reader) (int64, error) {
	return store.WriteChunk(ctx, chunker{s.localStore, defaultChunk}, id, offset, r)
}

// Finish checks and publishes the unfinished upload id (store.FinishChunks): its bytes are hashed
// and it is published in one rename (finish.go). A wrong size or hash keeps the partial as it is.
func (s calls) Finish(ctx context.Context, id string, size int64, blake3 string) (*store.Info, error) {
	return store.FinishChunks(ctx, chunker{s.localStore, defaultChunk}, id, size, blake3)
}

// Abort removes the unfinished upload id, waiting for a process that is writing it
// (store.AbortChunks).
func (s calls) Abort(ctx context.Context, id string) error {
	return store.AbortChunks(ctx, chunker{s.localStore, defaultChunk}, id)
}

// localReader is a finished upload open for reading, with its metadata.
type localReader struct {
	*os.File
	info *store.Info
}

func (r *localReader) Info() *store.Info { return r.info }

func (s calls) Info(ctx context.Context, id string) (*store.Info, error) { return s.ReadMeta(id) }

func (s calls) List(ctx context.Context) (*store.Listing, error) { return s.list() }

// NewBatch starts a group commit (store.Batcher).
func (s calls) NewBatch(ctx context.Context) (store.Batch, error) { return s.newBatch(), nil }

func (s calls) Sweep(ctx context.Context, wait time.Duration, dryRun bool) (store.Sweeper, error) {
	sw, err := s.sweep(wait, dryRun)
	if err != nil {
		return nil, err // not a nil *sweeper in a non-nil interface
	}
	return sw, nil
}
