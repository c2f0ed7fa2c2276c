//go:build unix

package local

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// readLimits reads the mark, never through a link (store.Quota.Read).
func (s *localStore) readLimits(context.Context) (store.Limits, error) {
	idir, err := s.openInternalIfThere()
	if err != nil || idir < 0 {
		return store.Limits{}, err
	}
	defer unix.Close(idir)
	b, err := readSmallAt(idir, markName, 1<<16)
	if errors.Is(err, unix.ENOENT) {
		return store.Limits{}, nil
	}
	if err != nil {
		return store.Limits{}, storeErr(s.internal(markName), err)
	}
	return store.ParseMark(s.internal(markName), b)
}

// admit checks a new upload id, one a batch claimed first, against the limits and reserves its
// room (store.Quota.Admit; a partial takes store.Quota.AdmitNew).
func (s *localStore) admit(id, name string, size int64) (release func(), err error) {
	l, err := s.quota.Limits(context.Background())
	if err != nil {
		return func() {}, err
	}
	return s.quota.Admit(context.Background(), l, id, name, size)
}

// published drops the reservations of the uploads of a commit (store.Quota.Done).
func (s *localStore) published(outs []*out) {
	ids := make([]string, len(outs))
	for i, o := range outs {
		ids[i] = o.id
	}
	s.quota.Done(context.Background(), ids...)
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
	dir, err := r.s.openInternal(true, reservedDir)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	return wrap(r.s.internal(reservedDir, key), writeNewAt(dir, key, body, FileMode, false))
}

func (r reserver) Reservations(ctx context.Context) (map[string][]byte, error) {
	out := map[string][]byte{}
	fd, err := r.s.openInternalIfThere(reservedDir)
	if err != nil {
		return nil, err
	}
	if fd < 0 {
		return out, nil
	}
	d := os.NewFile(uintptr(fd), r.s.internal(reservedDir)) // d owns fd
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, storeErr(d.Name(), err)
	}
	for _, name := range names {
		b, err := readSmallAt(fd, name, 4096)
		if err != nil {
			b = []byte{} // unreadable: kept as an empty body, which no check counts (and drops)
		}
		out[name] = b
	}
	return out, nil
}

func (r reserver) DropReservation(ctx context.Context, key string) error {
	fd, err := r.s.openInternalIfThere(reservedDir)
	if err != nil || fd < 0 {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Unlinkat(fd, key, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return storeErr(r.s.internal(reservedDir, key), err)
	}
	return nil
}

// writeMark replaces the mark by one with limits l: written under a name of its own, fsynced and
// renamed over the mark (replaceAt), so the mark is always whole.
func (s *localStore) writeMark(l store.Limits) error {
	idir, err := s.openInternal(true)
	if err != nil {
		return err
	}
	defer unix.Close(idir)
	return wrap(s.internal(markName), replaceAt(idir, "", markName, store.MarkText(l), time.Time{}, true))
}

// Limits is store.Limiter's: the store's limits, from its mark (none while it does not exist, or
// when its mark is of an earlier version).
func (s *localStore) Limits(ctx context.Context) (store.Limits, error) {
	if err := s.open(false); err != nil {
		return store.Limits{}, err
	}
	return s.quota.Limits(ctx)
}

// SetLimits is store.Limiter's, `store init`: it makes the store (as an upload would: refused
// where it may not be one) and sets its limits in its mark, once (store.Quota.Set).
func (s *localStore) SetLimits(ctx context.Context, lim store.Limits) error {
	if err := s.open(true); err != nil {
		return err
	}
	have, err := s.readLimits(ctx)
	if err != nil {
		return err
	}
	return s.quota.Set(lim, have, "editing "+s.internal(markName), func() error { return s.writeMark(lim) })
}
