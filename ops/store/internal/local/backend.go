//go:build unix

package local

import (
	"context"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/attachctl/attachctl/ops/store"
)

// backend is the local folder store as a store.Backend. The folder is opened (and judged: a store,
// missing, or not a store) at the first call; only Begin may make or mark it.
type backend struct {
	dir  string
	mu   sync.Mutex                 // serialises the opens, and guards err
	s    atomic.Pointer[localStore] // the store, once an open found or made it
	made atomic.Bool                // opened with create once: judged, made and marked
	// err: a read-open failed with it, and later reads return it without opening again while no
	// store is found (s nil), until an upload makes the store.
	err  error
	wait time.Duration

	store.TreesOn // store.Trees: the engine's rules over the store, opened for each call (New)
}

var _ store.Backend = (*backend)(nil)

// New returns the local store at dir as a store.Backend, with the Features below. Nothing is read or written yet: the folder is judged at the first call, and only an upload
// makes or marks it. It is the one way into a local store from outside this package. On Windows
// it refuses (local_windows.go).
func New(dir string, opts ...Option) (store.Backend, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	l := &backend{dir: dir, wait: o.limitsWait}
	// store.Trees opens the store for each call as Begin does for an upload (create: making or
	// marking it), and as a read does otherwise.
	l.TreesOn = func(_ context.Context, create bool) (store.TreeBackend, error) {
		s, err := l.store(create)
		if err != nil {
			return nil, err // not a nil *localStore in a non-nil interface
		}
		return s, nil
	}
	return l, nil
}

// Features: the local store's uploads are files on this machine, and it has every ability the
// seam knows but its own chunk sizes.
func (l *backend) Features() store.Features {
	return store.Features{Pather: l, Exister: l, Limiter: l, Checker: l, Trees: l, Streamer: l, Batcher: l, Moder: l}
}

// store opens the store for reading; create: for an upload, making or marking it. A read-open
// that failed (no store yet) is not made again, but an upload that makes the store afterwards is
// seen by every later call.
func (l *backend) store(create bool) (*localStore, error) {
	if s := l.s.Load(); s != nil && (!create || l.made.Load()) {
		return s, nil // judged for this run already: an upload per file need not judge it again
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.s.Load(); s != nil && (!create || l.made.Load()) {
		return s, nil // opened meanwhile
	}
	if !create && l.err != nil {
		return nil, l.err
	}
	s, err := openStore(l.dir, create)
	if err != nil {
		if !create {
			l.err = err
		}
		return nil, err
	}
	if l.s.Load() == nil { // a store a read-open found stays the one every call gets
		s.quota.Wait = l.wait // how long an upload waits for the limits lock
		l.s.Store(s)
	}
	if create {
		l.made.Store(true)
	}
	return l.s.Load(), nil
}

// Location is the store's absolute folder.
func (l *backend) Location() string {
	if s, err := l.store(false); err == nil {
		return s.Dir
	}
	return l.dir
}

// FinishedPath is where a finished upload's bytes are.
func (l *backend) FinishedPath(id, name string) string {
	s, err := l.store(false)
	if err != nil {
		return ""
	}
	return s.FinishedPath(id, name)
}

// Begin starts an unfinished upload named name of size bytes (-1: open, fixed at Finish) and
// returns its new id. Its offset is 0. What it is given is checked before the store is made.
func (l *backend) Begin(ctx context.Context, name string, size int64) (string, error) {
	if err := store.CheckBegin(name, size); err != nil {
		return "", err
	}
	s, err := l.store(true)
	if err != nil {
		return "", err
	}
	p, err := s.newPartial(name, size, nil)
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
func (l *backend) Write(ctx context.Context, id string, offset int64, r io.Reader) (int64, error) {
	s, err := l.store(false)
	if err != nil {
		return 0, err
	}
	return store.WriteChunk(ctx, chunker{s, defaultChunk}, id, offset, r)
}

// Status reports an upload, finished or unfinished (store.StatusOf). A store that cannot be
// opened fails its first step, Info, with the open's error (never upload.missing).
func (l *backend) Status(ctx context.Context, id string) (*store.Status, error) {
	return store.StatusOf(ctx, l, id)
}

// PartialStatus reads the unfinished upload id for Status (store.StatusBackend).
func (l *backend) PartialStatus(ctx context.Context, id string) (store.UnfinishedState, int64, error) {
	s, err := l.store(false)
	if err != nil {
		return store.UnfinishedState{}, 0, err
	}
	return s.partialStatus(id)
}

// Finish checks and publishes the unfinished upload id (store.FinishChunks): its bytes are hashed
// and it is published in one rename (finish.go). A wrong size or hash keeps the partial as it is.
func (l *backend) Finish(ctx context.Context, id string, size int64, blake3 string) (*store.Info, error) {
	s, err := l.store(false)
	if err != nil {
		return nil, err
	}
	return store.FinishChunks(ctx, chunker{s, defaultChunk}, id, size, blake3)
}

// Abort removes the unfinished upload id, waiting for a process that is writing it
// (store.AbortChunks).
func (l *backend) Abort(ctx context.Context, id string) error {
	s, err := l.store(false)
	if err != nil {
		return err
	}
	return store.AbortChunks(ctx, chunker{s, defaultChunk}, id)
}

func (l *backend) Open(ctx context.Context, id, name string) (store.Reader, error) {
	s, err := l.store(false)
	if err != nil {
		return nil, err
	}
	return s.Open(ctx, id, name)
}

// localReader is a finished upload open for reading, with its metadata.
type localReader struct {
	*os.File
	info *store.Info
}

func (r *localReader) Info() *store.Info { return r.info }

func (l *backend) Info(ctx context.Context, id string) (*store.Info, error) {
	s, err := l.store(false)
	if err != nil {
		return nil, err
	}
	return s.ReadMeta(id)
}

func (l *backend) List(ctx context.Context) (*store.Listing, error) {
	s, err := l.store(false)
	if err != nil {
		return nil, err
	}
	return s.List()
}

// Stream puts a whole source into the store (store.Streamer), making or marking the store.
func (l *backend) Stream(ctx context.Context, src store.Source, f store.SourceFile, opts store.StreamOptions) (*store.Info, error) {
	s, err := l.store(true)
	if err != nil {
		return nil, err
	}
	return s.Stream(ctx, src, f, opts)
}

// NewBatch starts a group commit (store.Batcher), making or marking the store.
func (l *backend) NewBatch(ctx context.Context) (store.Batch, error) {
	s, err := l.store(true)
	if err != nil {
		return nil, err
	}
	return s.NewBatch(), nil
}

// Check is the local store's own rules on an upload's folder (store.Checker).
func (l *backend) Check(ctx context.Context, id string) error {
	s, err := l.store(false)
	if err != nil {
		return err
	}
	return s.Check(id)
}

func (l *backend) MarkUsed(ctx context.Context, ids []string, at time.Time) error {
	s, err := l.store(false)
	if err != nil {
		return err
	}
	return s.MarkUsed(ids, at)
}

func (l *backend) Sweep(ctx context.Context, wait time.Duration, dryRun bool) (store.Sweeper, error) {
	s, err := l.store(false)
	if err != nil {
		return nil, err
	}
	sw, err := s.Sweep(wait, dryRun)
	if err != nil {
		return nil, err
	}
	return sw, nil
}
