//go:build unix

package local

import (
	"context"
	"errors"
	"path"
	"time"

	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// The reservations and the mark are store.FileReserver and store.FileMark over the small files of
// STORE/.attachctl (smallFiles): the mark STORE/.attachctl/store, a reservation the file
// STORE/.attachctl/reserved/<id>. The limits lock is STORE/.attachctl/limits.lock, a flock,
// released by the kernel when its holder dies.
const limitsLock = "limits.lock"

// reserver takes a reservation under the limits lock.
func reserver(s *localStore) store.FileReserver {
	return store.FileReserver{F: smallFiles{s}, Lock: func(wait time.Duration) (func() error, error) {
		l, err := s.lock(limitsLock, unix.LOCK_EX, wait)
		if err != nil {
			return nil, err
		}
		return l.Unlock, nil
	}}
}

// marker reads the mark of a store opened (judged) first, and makes or marks the store as an
// upload does.
func marker(s *localStore) store.FileMark {
	return store.FileMark{F: smallFiles{s}, Make: func(context.Context) error { return s.open(true) },
		Open: func(context.Context) error { return s.open(false) }}
}

// smallFiles opens the folders of STORE/.attachctl (store.SmallFiles) as every folder of the
// store is opened: openDir, or openIfThere for a reader that makes nothing.
type smallFiles struct{ s *localStore }

func (f smallFiles) OpenSmall(rel string, create bool) (store.SmallDir, error) {
	names := []string{InternalDir, rel}
	fd, err := -1, error(nil)
	if create {
		fd, err = f.s.openDir(lockErr, true, names...)
	} else {
		fd, err = f.s.openIfThere(names...)
	}
	if err != nil || fd < 0 {
		return nil, err
	}
	return smallDir{fd: fd, at: f.s.internal(rel)}, nil
}

// smallDir is a folder of small files open as fd, at its path.
type smallDir struct {
	fd int
	at string
}

func (d smallDir) Read(name string, limit int64) ([]byte, error) {
	b, err := readFileAt(d.fd, name, path.Join(d.at, name), limit, regular)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	return b, wrap(path.Join(d.at, name), err)
}

// Create makes the file with O_EXCL (writeNewAt).
func (d smallDir) Create(name string, body []byte) error {
	return wrap(path.Join(d.at, name), writeNewAt(d.fd, name, body, FileMode, false))
}

// Replace writes the file under a name of its own, fsynced and renamed over name (replaceAt).
func (d smallDir) Replace(name string, body []byte) error {
	return wrap(path.Join(d.at, name), replaceAt(d.fd, "", name, body, time.Time{}, true))
}

func (d smallDir) Names() ([]string, error) {
	names, err := namesAt(d.fd, d.at)
	return names, wrap(d.at, err)
}

func (d smallDir) Remove(name string) error {
	if err := unix.Unlinkat(d.fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return storeErr(path.Join(d.at, name), err)
	}
	return nil
}

func (d smallDir) Close() { unix.Close(d.fd) }
