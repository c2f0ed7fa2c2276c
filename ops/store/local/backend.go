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
	once sync.Once
	s    *localStore
	err  error
	made atomic.Bool // opened with create once: judged, made and marked
	mu   sync.Mutex  // held by the first opens with create, which may run at once, while one sets s
	wait time.Duration
}

var (
	_ store.Backend  = (*backend)(nil)
	_ store.Pather   = (*backend)(nil)
	_ store.Streamer = (*backend)(nil)
	_ store.Batcher  = (*backend)(nil)
	_ store.Checker  = (*backend)(nil)
)

// New returns the local store at dir as a store.Backend; it also implements store.Pather,
// store.Streamer, store.Batcher, store.Checker, store.Trees, store.Limiter and store.Exister.
// Nothing is read or written yet: the folder is judged at the first call, and only an upload
// makes or marks it. It is the one way into a local store from outside this package. On Windows
// it refuses (local_windows.go).
func New(dir string, opts ...Option) (store.Backend, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return &backend{dir: dir, wait: o.limitsWait}, nil
}

// Backend returns s as a store.Backend.
func (s *localStore) Backend() *backend {
	l := &backend{dir: s.Dir, s: s}
	l.once.Do(func() {})
	return l
}

// store opens the store for reading; create: for an upload, making or marking it.
func (l *backend) store(create bool) (*localStore, error) {
	if create && l.made.Load() {
		return l.s, nil // judged for this run already: an upload per file need not judge it again
	}
	if create {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.made.Load() {
			return l.s, nil
		}
		s, err := openStore(l.dir, true)
		if err != nil {
			return nil, err
		}
		l.once.Do(func() {})
		if l.s == nil {
			s.limitsWait(l.wait)
			l.s = s
		}
		l.made.Store(true)
		return l.s, nil
	}
	l.once.Do(func() {
		if l.s, l.err = openStore(l.dir, false); l.err == nil {
			l.s.limitsWait(l.wait)
		}
	})
	return l.s, l.err
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

func (l *backend) Begin(ctx context.Context, name string, size int64) (string, error) {
	if err := ValidName(name); err != nil {
		return "", err
	}
	s, err := l.store(true)
	if err != nil {
		return "", err
	}
	return s.Begin(name, size)
}

func (l *backend) Write(ctx context.Context, id string, offset int64, r io.Reader) (int64, error) {
	s, err := l.store(false)
	if err != nil {
		return 0, err
	}
	return s.Chunk(id, offset, r, 0)
}

func (l *backend) Status(ctx context.Context, id string) (*store.Status, error) {
	s, err := l.store(false)
	if err != nil {
		return nil, err
	}
	return s.Status(id)
}

func (l *backend) Finish(ctx context.Context, id string, size int64, blake3 string) (*store.Info, error) {
	s, err := l.store(false)
	if err != nil {
		return nil, err
	}
	return s.Finish(id, size, blake3)
}

func (l *backend) Abort(ctx context.Context, id string) error {
	s, err := l.store(false)
	if err != nil {
		return err
	}
	return s.Abort(id)
}

func (l *backend) Open(ctx context.Context, id, name string) (store.Reader, error) {
	s, err := l.store(false)
	if err != nil {
		return nil, err
	}
	f, err := s.OpenFinished(id, name)
	if err != nil {
		return nil, err
	}
	m, err := s.ReadMeta(id)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &localReader{File: f, info: m}, nil
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
