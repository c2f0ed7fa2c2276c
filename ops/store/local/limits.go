//go:build unix

package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"sync"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// quota is a Store's view of its limits: read from the mark once; each upload is admitted by a
// reservation taken under the store's limits lock (store.Quota), so that uploads of many
// processes at once never pass a limit.
type quota struct {
	once   sync.Once
	limits store.Limits
	err    error
	q      *store.Quota
}

// Limits returns the store's limits, from its mark (none for a store that does not exist yet,
// or whose mark is of an earlier version).
func (s *Store) Limits() (store.Limits, error) {
	s.quota.once.Do(func() {
		s.quota.limits, s.quota.err = s.readLimits()
		s.quota.q = &store.Quota{R: reserver{s}, Loc: s.Dir, List: func(context.Context) (*store.Listing, error) { return s.List() }}
	})
	return s.quota.limits, s.quota.err
}

// readLimits reads the mark, never through a link.
func (s *Store) readLimits() (store.Limits, error) {
	idir, err := s.openInternalNoCreate()
	if err != nil {
		if fault.CodeOf(err) == fault.UploadMissing || errors.Is(err, unix.ENOENT) {
			return store.Limits{}, nil
		}
		if _, serr := os.Lstat(s.internal()); errors.Is(serr, os.ErrNotExist) {
			return store.Limits{}, nil
		}
		return store.Limits{}, err
	}
	defer unix.Close(idir)
	fd, err := unix.Openat(idir, markName, unix.O_RDONLY|openFlags, 0)
	if errors.Is(err, unix.ENOENT) {
		return store.Limits{}, nil
	}
	if err != nil {
		return store.Limits{}, storeErr(s.internal(markName), err)
	}
	f := os.NewFile(uintptr(fd), s.internal(markName)) // f owns fd
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return store.Limits{}, fault.Errorf(fault.UploadUnreadable, "store mark %s: not a regular file", f.Name())
	}
	b, err := io.ReadAll(io.LimitReader(f, 1<<16))
	if err != nil {
		return store.Limits{}, storeErr(f.Name(), err)
	}
	return store.ParseMark(f.Name(), b)
}

// admit checks a new upload id of size bytes (-1: open) named name against the limits and, when
// it is admitted, reserves its room until it is published; release drops the reservation of an
// upload that failed. It runs before anything of the upload is made.
func (s *Store) admit(id, name string, size int64) (release func(), err error) {
	l, err := s.Limits()
	if err != nil {
		return func() {}, err
	}
	return s.quota.q.Admit(context.Background(), l, id, name, size)
}

// published drops the reservations of the uploads of a commit: each is now a finished upload
// (counted as one), or failed.
func (s *Store) published(outs []*out) {
	if l, err := s.Limits(); err != nil || l.None() {
		return
	}
	for _, o := range outs {
		reserver{s}.DropReservation(context.Background(), o.id)
	}
}

// The reservations' primitives (store.Reserver): the limits lock is STORE/.attachctl/limits.lock
// (a flock, released by the kernel when its holder dies), a reservation the file
// STORE/.attachctl/reserved/<id>, made O_EXCL.
const (
	limitsLock  = "limits.lock"
	reservedDir = "reserved"
)

type reserver struct{ s *Store }

type flockHeld struct{ l *Lock }

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
	dir, err := r.s.OpenInternalDir(reservedDir)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	f, err := createAt(dir, key, r.s.internal(reservedDir, key), unix.O_WRONLY)
	if err != nil {
		return err
	}
	_, werr := f.Write(body)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		unix.Unlinkat(dir, key, 0)
		return storeErr(f.Name(), werr)
	}
	return nil
}

func (r reserver) Reservations(ctx context.Context) (map[string][]byte, error) {
	out := map[string][]byte{}
	idir, err := r.s.openInternalNoCreate()
	if fault.CodeOf(err) == fault.UploadMissing {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(idir)
	fd, err := openDirAt(idir, reservedDir)
	if errors.Is(err, unix.ENOENT) {
		return out, nil
	}
	if err != nil {
		return nil, lockErr(r.s.internal(reservedDir), err)
	}
	d := os.NewFile(uintptr(fd), r.s.internal(reservedDir)) // d owns fd
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, storeErr(d.Name(), err)
	}
	for _, name := range names {
		b := []byte{} // unreadable: kept as an empty body, which no check counts (and drops)
		if f, err := unix.Openat(fd, name, unix.O_RDONLY|openFlags, 0); err == nil {
			buf := make([]byte, 4096)
			if n, err := unix.Read(f, buf); err == nil {
				b = buf[:n]
			}
			unix.Close(f)
		}
		out[name] = b
	}
	return out, nil
}

func (r reserver) DropReservation(ctx context.Context, key string) error {
	idir, err := r.s.openInternalNoCreate()
	if fault.CodeOf(err) == fault.UploadMissing {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(idir)
	fd, err := openDirAt(idir, reservedDir)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return lockErr(r.s.internal(reservedDir), err)
	}
	defer unix.Close(fd)
	if err := unix.Unlinkat(fd, key, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return storeErr(r.s.internal(reservedDir, key), err)
	}
	return nil
}

// chunkRoom is how many bytes a chunk of n bytes (-1: not known before it is read) at offset cur
// of the unfinished upload id named name may add under the limits (-1: no limit), the refusal
// for a chunk that would go past it, and release, to be called once the chunk is written (or
// not). The room is reserved while the chunk is written (store.Quota.Grow): each `upload chunk`
// is a process of its own, counted with every live reservation.
func (s *Store) chunkRoom(id, name string, cur, n int64) (int64, func(end int64) error, func(), error) {
	l, err := s.Limits()
	if err != nil {
		return -1, nil, func() {}, err
	}
	end := int64(-1)
	if n >= 0 {
		end = cur + n
	}
	return s.quota.q.Grow(context.Background(), l, id, name, cur, end)
}

// SetLimits is `store init`: it makes the store (as an upload would: refused where it may not be
// one) and sets its limits in its mark. Limits are set once: a store that has limits keeps them
// (the same limits again are no change), and one without (a new store, or one made before) gets
// these. It returns the limits the store has.
func SetLimits(dir string, l store.Limits) (*Store, error) {
	s, err := Open(dir, true)
	if err != nil {
		return nil, err
	}
	have, err := s.Limits()
	if err != nil {
		return nil, err
	}
	switch {
	case have == l:
		return s, nil
	case !have.None():
		return nil, fault.Errorf(fault.UploadInvalid,
			"store %s: already has limits (%s); they are set once, when the store is made (or by editing %s)", s.Dir, have.String(), s.internal(markName))
	}
	if err := s.writeMark(l); err != nil {
		return nil, err
	}
	s.quota = quota{}
	return s, nil
}

// writeMark replaces the mark by one with limits l: written under a name of its own, fsynced and
// renamed over the mark, so the mark is always whole.
func (s *Store) writeMark(l store.Limits) error {
	idir, err := s.openInternal()
	if err != nil {
		return err
	}
	defer unix.Close(idir)
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := markName + ".new-" + hex.EncodeToString(rnd[:])
	f, err := createAt(idir, tmp, s.internal(tmp), unix.O_WRONLY)
	if err != nil {
		return err
	}
	_, werr := f.Write(store.MarkText(l))
	if werr == nil {
		werr = syncFile(f)
	}
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		werr = unix.Renameat(idir, tmp, idir, markName)
	}
	if werr == nil {
		werr = unix.Fsync(idir)
	}
	if werr != nil {
		unix.Unlinkat(idir, tmp, 0)
		return storeErr(s.internal(markName), werr)
	}
	return nil
}

var _ store.Limiter = (*Local)(nil)

// Limits is store.Limiter's: the store's limits (none while it does not exist).
func (l *Local) Limits(ctx context.Context) (store.Limits, error) {
	s, err := l.store(false)
	if err != nil {
		return store.Limits{}, err
	}
	return s.Limits()
}

// SetLimits is store.Limiter's: `store init`.
func (l *Local) SetLimits(ctx context.Context, lim store.Limits) error {
	s, err := SetLimits(l.dir, lim)
	if err == nil {
		l.s = s
	}
	return err
}
