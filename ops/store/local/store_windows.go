package local

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// On Windows the local store is refused: its guarantees rest on calls Windows does not have in
// the same form (opening each folder relative to the one above without following a link, flock,
// a rename that refuses to replace, owner-only modes), and a store that kept only some of them
// would be one an attacker with write access could point outside itself. Every other command
// (sniff, shrink, prompt) works; Open says so, and the methods below are never reached.

var errWindows = fault.Errorf(fault.StoreUnreachable,
	"the local store is not supported on Windows yet (its guarded opens and locks need Linux, macOS or FreeBSD); sniff, shrink and prompt work")

// Store is one store folder, by its absolute path.
type Store struct{ Dir string }

// Open refuses: see above.
func Open(dir string, create bool) (*Store, error) { return nil, errWindows }

// Lock is a held lock on the store.
type Lock struct{}

// Unlock releases nothing.
func (l *Lock) Unlock() error { return nil }

// Batch publishes many uploads together.
type Batch struct{}

func (b *Batch) Settle(id string) error { return errWindows }
func (b *Batch) Commit() error          { return nil }

// Sweeper is a running sweep.
type Sweeper struct{}

func (sw *Sweeper) Close() error { return nil }
func (sw *Sweeper) Remove(ctx context.Context, cands []store.Entry, stale func(store.Entry) bool, each func(store.Entry, store.Outcome, error) error) error {
	return errWindows
}

func (s *Store) UploadDir(id string) string                     { return s.Dir + `\` + id }
func (s *Store) limitsWait(time.Duration)                       {}
func (s *Store) FinishedPath(id, name string) string            { return s.Dir + `\` + id + `\` + name }
func (s *Store) OpenFinished(id, name string) (*os.File, error) { return nil, errWindows }
func (s *Store) ReadMeta(id string) (*Meta, error)              { return nil, errWindows }
func (s *Store) IDs() ([]string, error)                         { return nil, errWindows }
func (s *Store) Begin(name string, size int64) (string, error)  { return "", errWindows }
func (s *Store) Chunk(id string, offset int64, r io.Reader, max int64) (int64, error) {
	return 0, errWindows
}
func (s *Store) Status(id string) (*Status, error) { return nil, errWindows }
func (s *Store) Abort(id string) error             { return errWindows }
func (s *Store) Finish(id string, size int64, blake3hex string) (*Meta, error) {
	return nil, errWindows
}
func (s *Store) LockShared(wait time.Duration) (*Lock, error)    { return nil, errWindows }
func (s *Store) LockExclusive(wait time.Duration) (*Lock, error) { return nil, errWindows }
func (s *Store) LockSweep(wait time.Duration) (*Lock, error)     { return nil, errWindows }
func (s *Store) MarkUsed(ids []string, at time.Time) error       { return errWindows }
func (s *Store) LastUsed(id string) (time.Time, bool, error)     { return time.Time{}, false, errWindows }
func (s *Store) UploadState(id string) (*Meta, time.Time, bool, error) {
	return nil, time.Time{}, false, errWindows
}
func (s *Store) Stream(ctx context.Context, src store.Source, f store.SourceFile, opts store.StreamOptions) (*Meta, error) {
	return nil, errWindows
}
func (s *Store) NewBatch() *Batch                                        { return &Batch{} }
func (s *Store) Check(id string) error                                   { return errWindows }
func (s *Store) List() (*store.Listing, error)                           { return nil, errWindows }
func (s *Store) Sweep(wait time.Duration, dryRun bool) (*Sweeper, error) { return nil, errWindows }
func (s *Store) MakeFinished(name string, data []byte, made, used time.Time) (*Meta, error) {
	return nil, errWindows
}

// OpenForCheck opens a path named by a b3sum line: on Windows, as any file (there is no store
// here to guard).
func OpenForCheck(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		code := fault.FileUnreadable
		if errors.Is(err, os.ErrNotExist) {
			code = fault.FileMissing
		}
		return nil, fault.Errorf(code, "%v", err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fault.Errorf(fault.FileNotRegular, "%s: not a regular file", path)
	}
	return f, nil
}
