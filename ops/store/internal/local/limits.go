//go:build unix

package local

import (
	"context"
	"errors"
	"time"

	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// marker keeps the store's mark, STORE/.attachctl/store, never read or written through a link
// (store.Marker).
type marker struct{ s *localStore }

func (m marker) MakeStore(context.Context) error { return m.s.open(true) }

func (m marker) ReadMark(context.Context) ([]byte, string, error) {
	if err := m.s.open(false); err != nil {
		return nil, "", err
	}
	idir, err := m.s.openIfThere(InternalDir)
	if err != nil || idir < 0 {
		return nil, "", err
	}
	defer unix.Close(idir)
	b, err := readFileAt(idir, store.MarkName, m.s.internal(store.MarkName), 1<<16, regular)
	if errors.Is(err, unix.ENOENT) {
		return nil, "", nil
	}
	return b, "", wrap(m.s.internal(store.MarkName), err)
}

// ReplaceMark writes the mark under a name of its own, fsynced and renamed over the mark
// (replaceAt), so the mark is always whole.
func (m marker) ReplaceMark(_ context.Context, body []byte, _ string) error {
	idir, err := m.s.openDir(lockErr, true, InternalDir)
	if err != nil {
		return err
	}
	defer unix.Close(idir)
	return wrap(m.s.internal(store.MarkName), replaceAt(idir, "", store.MarkName, body, time.Time{}, true))
}

// The reservations' primitives (store.Reserver): the limits lock is STORE/.attachctl/limits.lock
// (a flock, released by the kernel when its holder dies), a reservation the file
// STORE/.attachctl/reserved/<id>, made O_EXCL.
const (
	limitsLock  = "limits.lock"
	reservedDir = "reserved"
)

type reserver struct{ s *localStore }

type flockHeld struct{ l *heldLock }

func (h flockHeld) Unlock(context.Context) (bool, error) { return true, h.l.Unlock() }

func (r reserver) LockLimits(ctx context.Context, wait time.Duration) (store.LimitsLock, error) {
	l, err := r.s.lock(limitsLock, unix.LOCK_EX, wait)
	if err != nil {
		return nil, err
	}
	return flockHeld{l}, nil
}

func (r reserver) PutReservation(ctx context.Context, key string, body []byte) error {
	if err := store.ValidID(key); err != nil {
		return err
	}
	dir, err := r.s.openDir(lockErr, true, InternalDir, reservedDir)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	return wrap(r.s.internal(reservedDir, key), writeNewAt(dir, key, body, FileMode, false))
}

func (r reserver) Reservations(ctx context.Context) (map[string][]byte, error) {
	out := map[string][]byte{}
	fd, names, err := r.s.listIfThere(InternalDir, reservedDir)
	if fd < 0 {
		return out, err
	}
	defer unix.Close(fd)
	for _, name := range names {
		b, err := readFileAt(fd, name, name, 4096, regular)
		if err != nil {
			b = []byte{} // unreadable: kept as an empty body, which no check counts (and drops)
		}
		out[name] = b
	}
	return out, nil
}

func (r reserver) DropReservation(ctx context.Context, key string) error {
	fd, err := r.s.openIfThere(InternalDir, reservedDir)
	if err != nil || fd < 0 {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Unlinkat(fd, key, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return storeErr(r.s.internal(reservedDir, key), err)
	}
	return nil
}
