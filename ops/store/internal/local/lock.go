//go:build unix

package local

import (
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// The store's lock files and what each guards are docs/store.md's ("The lock", and the layout).
// Locks are taken by polling LOCK_NB with a short backoff, so a wait can end on time. Every file
// and folder on the way is opened without following a link.

// heldLock is a held flock on one of the store's lock files.
type heldLock = store.HeldLock

// lockTags are the tags of the lock files in messages (store.LockName).
var lockTags = map[string]string{lockName: "marker", sweepLock: "sweep", limitsLock: "limits"}

// lock takes the lock file name of STORE/.attachctl (lockName, sweepLock or limitsLock; made when
// missing) with how (LOCK_SH or LOCK_EX), waiting at most wait (store.HoldLockFile).
func (s *localStore) lock(name string, how int, wait time.Duration) (*heldLock, error) {
	idir, err := s.openDir(lockErr, true, InternalDir)
	if err != nil {
		return nil, err
	}
	defer unix.Close(idir)
	path := s.internal(name)
	var st unix.Stat_t
	f, err := openFileAt(idir, name, path, unix.O_RDWR|unix.O_CREAT, func(at *unix.Stat_t) error { st = *at; return nil })
	if err != nil {
		return nil, lockErr(path, err)
	}
	return store.HoldLockFile(flockFile{f, int(f.Fd()), how}, statOf(name, &st), how == unix.LOCK_EX, wait, s.Dir, lockTags[name], path)
}

// flockFile is the open lock file (its descriptor fd) as store.HoldLockFile takes it, with how
// (LOCK_SH or LOCK_EX).
type flockFile struct {
	*os.File
	fd, how int
}

func (l flockFile) Try() (bool, error) {
	err := flock(l.fd, l.how|unix.LOCK_NB)
	if err == unix.EWOULDBLOCK {
		return false, nil
	}
	return err == nil, err
}

// openIfThere opens STORE/<names...> (the store folder itself without names) for a reader that
// makes nothing: -1 when a folder on the way is not there.
func (s *localStore) openIfThere(names ...string) (int, error) {
	fd, err := s.openDir(lockErr, false, names...)
	if fault.CodeOf(err) == fault.UploadMissing {
		return -1, nil
	}
	return fd, err
}

// flock is flock(2), taken again when a signal interrupts it.
func flock(fd, how int) error {
	for {
		if err := unix.Flock(fd, how); err != unix.EINTR {
			return err
		}
	}
}

const noFollowDir = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// openSubdir opens name in the folder parent as a real folder, making it 0700 first when it is
// missing; one that was there must be one the store takes as its own (store.OwnFolder). path is
// for messages. ownDir is the step of openDirs into a partial's tree: the folder opened or made as
// openSubdir does, its mode mended rather than refused.
var openSubdir, ownDir = subdir(false), subdir(true)

// subdir is the step openSubdir, and with mend ownDir.
func subdir(mend bool) func(parent int, name, path string) (int, error) {
	return func(parent int, name, path string) (int, error) {
		fd, err := openDirAt(parent, name)
		if errors.Is(err, unix.ENOENT) {
			if fd, err = mkdirFd(parent, name, path); !errors.Is(err, unix.EEXIST) {
				return fd, err // made here, or failed
			}
			fd, err = openDirAt(parent, name) // made meanwhile by another process
		}
		if err != nil {
			return -1, lockErr(path, err)
		}
		var st unix.Stat_t
		if err = unix.Fstat(fd, &st); err == nil {
			err = store.OwnFolder(statOf(name, &st), path, mend, func(m fs.FileMode) error { return unix.Fchmod(fd, uint32(m)) })
		}
		if err != nil {
			unix.Close(fd)
			return -1, lockErr(path, err)
		}
		return fd, nil
	}
}

// The coders of the store's system errors (docs/errors.md): storeErr, and wrap where it reads
// better, for a file or folder read or written; lockErr for one of the store's folders or internal
// files opened; guardErr for the guarded open of an upload. nil stays nil.
var (
	storeErr = store.FileErr
	wrap     = store.FileErr
	lockErr  = store.FolderErr
	guardErr = store.GuardErr
)
