//go:build unix

// Package local is the local folder backend of the seam in ops/store (New opens it as a
// store.Backend, the one way in from outside): the only package that makes file system calls on a
// store. Its layout, guarded opens and writes, locks, durability and crash recovery are
// docs/store.md, "The local store"; the comments here say how the code keeps them.
//
// Every folder is opened relative to the one above it with O_NOFOLLOW (openDirs), every file
// relative to its folder; files the store makes are made O_EXCL. Every descriptor has one owner
// that closes it once: an *os.File, or a raw descriptor closed by the function that opened it.
package local

import (
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// localStore is the local folder store, and the store.Backend New returns. The folder is opened
// (and judged: a store, missing, or not a store) at the first call; only an upload may make or
// mark it.
type localStore struct {
	Dir     string       // the store's absolute folder
	opening store.Opened // the folder opened for this run (open)

	store.OpenCalls // the Backend's calls, each opening the store first (New)
	store.TreesOn   // store.Trees: the engine's rules over the store, opened for each call (New)
	store.FoldersOn // store.Checker and store.Moder: the rules of an upload's folder, likewise

	idx   store.FinishedIndex // finished uploads by blake3 and name, for the upload stage's dedupe
	parts store.PartialIndex  // unfinished uploads by source, for the upload stage's resume
	quota *store.Quota        // its limits and what it holds (limits.go), its Limiter
	meta  store.MetaIndex     // the metadata of small uploads (metaindex.go)
}

// open opens the store for reading; create: for an upload, making or marking it (store.Opened
// keeps what an open found for the run, store.OpenSite is the order, site the folder's steps).
// The store folder must be a real folder, not a symlink (refused before anything is made), and
// never inside another store or an upload.
func (s *localStore) open(create bool) error {
	return s.opening.Open(create, func(create bool) error {
		_, err := store.OpenSite(s.Dir, site{s}, create)
		return err
	})
}

// site is the store folder's steps of store.OpenSite. The mark, store.MarkName, holds
// store.MarkText: that the folder is a store, and its limits (store init). A mark of an earlier
// version holds plain text, and is a mark without limits.
type site struct{ s *localStore }

func (t site) Nested() error { return notNested(t.s.Dir) }
func (t site) Make() error   { return mkdirAll(t.s.Dir) }
func (t site) Mark() error   { return t.s.mark() }

// judge tells what the store folder is (store.Judge), reading without following a link or
// writing anything.
func (s *localStore) judge() (store.Verdict, error) { return store.JudgeSite(s.Dir, site{s}) }

// Look reads what the store folder holds without following a link or writing anything: a
// symlink or a file is refused here, as not a real folder.
func (t site) Look() (store.Seen, error) {
	s := t.s
	storefd, err := s.openIfThere()
	if err != nil || storefd < 0 {
		return store.Seen{}, err
	}
	d := os.NewFile(uintptr(storefd), s.Dir) // d owns storefd
	defer d.Close()
	seen := store.Seen{There: true}
	idir, err := openDirAt(storefd, InternalDir)
	switch {
	case err == nil:
		defer unix.Close(idir)
		seen.Mark = isEntry(idir, store.MarkName, false)
		seen.Names = []store.TopEntry{{Name: InternalDir, Dir: true}}
		return seen, nil
	case !errors.Is(err, unix.ENOENT):
		return seen, lockErr(s.internal(), err)
	}
	ents, err := d.ReadDir(store.JudgeNames)
	if len(ents) == 0 && err != nil && err != io.EOF {
		return seen, fault.Errorf(fault.UploadUnreadable, "store %s: %v", s.Dir, err)
	}
	for _, e := range ents {
		seen.Names = append(seen.Names, store.TopEntry{Name: e.Name(), Dir: e.IsDir()})
	}
	return seen, nil
}

// mark writes the store's mark (and its internal folders), never through a link.
func (s *localStore) mark() error {
	idir, err := s.openDir(lockErr, true, InternalDir)
	if err != nil {
		return err
	}
	defer unix.Close(idir)
	pfd, err := openSubdir(idir, partialDir, s.internal(partialDir))
	if err != nil {
		return err
	}
	unix.Close(pfd)
	err = writeNewAt(idir, store.MarkName, store.MarkText(store.Limits{}), FileMode, false)
	if errors.Is(err, unix.EEXIST) {
		return nil // marked meanwhile by another upload
	}
	return wrap(s.internal(store.MarkName), err)
}

// internal is a path under STORE/.attachctl.
func (s *localStore) internal(parts ...string) string {
	return filepath.Join(append([]string{s.Dir, InternalDir}, parts...)...)
}

// UploadDir is the folder of a finished upload.
func (s *localStore) UploadDir(id string) string { return filepath.Join(s.Dir, id) }

// FinishedPath is where a finished upload's bytes are.
func (s calls) FinishedPath(id, name string) string { return filepath.Join(s.Dir, id, name) }

// mkdirAll makes dir and its missing parents with mode 0700 whatever the umask.
func mkdirAll(dir string) error {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := mkdirAll(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, DirMode); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil
		}
		return storeErr(dir, err)
	}
	return wrap(dir, os.Chmod(dir, DirMode))
}

// openUploadFile is the guarded open of docs/store.md, the one way a file of a finished upload is
// read: rel ("/"-separated) of the finished upload id (an id and a name checked as plain by the
// caller: store.OpenCalls). The store folder and every folder down to the file are real folders
// (opened O_NOFOLLOW, openDirs), the file is opened without following a link and without blocking,
// and must be a regular file owned by the current user with mode 0400 (or 0600, as stores made
// before finished uploads were read-only have them) and exactly one hard link (openGuarded). A
// missing upload is upload.missing; anything else wrong is upload.unreadable.
func (s *localStore) openUploadFile(id, rel string) (*os.File, error) {
	fd, err := s.openDir(guardErr(id), false, append([]string{id}, strings.Split(path.Dir(rel), "/")...)...)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return openGuarded(fd, path.Base(rel), filepath.Join(s.UploadDir(id), rel), id)
}

// openDir is openDirs from the store folder down, which must itself be a real folder (no names:
// the store folder); code codes an error opening it, and (without create, which makes a missing
// folder 0700 whatever the umask) one opening a folder below. It is the one way into the store's
// folders, and openIfThere its reader's.
func (s *localStore) openDir(code func(path string, err error) error, create bool, names ...string) (int, error) {
	storefd, err := unix.Open(s.Dir, noFollowDir, 0)
	switch {
	case err != nil:
		return -1, code(s.Dir, err)
	case len(names) == 0:
		return storefd, nil
	}
	defer unix.Close(storefd)
	step := openOnly(code)
	if create {
		step = openSubdir
	}
	return openDirs(storefd, s.Dir, step, names...)
}

// openDirs is the one walk down folders of the store: it opens at/names[0]/names[1]/... below
// the open folder fd at path at (fd stays the caller's), each folder opened relative to the one
// above by step, which never follows a link ("" and "." are no step; no names: a duplicate of
// fd). The error is step's.
func openDirs(fd int, at string, step func(parent int, name, path string) (int, error), names ...string) (int, error) {
	cur := -1 // the folder reached, once it is no longer fd
	for _, name := range names {
		if name == "" || name == "." {
			continue
		}
		at = filepath.Join(at, name)
		parent := fd
		if cur >= 0 {
			parent = cur
		}
		next, err := step(parent, name, at)
		if cur >= 0 {
			unix.Close(cur)
		}
		if err != nil {
			return -1, err
		}
		cur = next
	}
	if cur < 0 {
		return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	}
	return cur, nil
}

// sysErr leaves the system's error as it is, for a caller that codes it.
func sysErr(_ string, err error) error { return err }

// openOnly is the step of openDirs that opens a folder that is there (openDirAt), its error
// coded by code.
func openOnly(code func(path string, err error) error) func(parent int, name, path string) (int, error) {
	return func(parent int, name, path string) (int, error) {
		fd, err := openDirAt(parent, name)
		if err != nil {
			return -1, code(path, err)
		}
		return fd, nil
	}
}

// openGuarded opens name inside the folder dirfd under the guarded-open rules (openFileAt,
// guarded). Not there is upload.missing; anything else is upload.unreadable (guardErr).
func openGuarded(dirfd int, name, path, id string) (*os.File, error) {
	f, err := openFileAt(dirfd, name, path, unix.O_RDONLY, guarded(path, id))
	return f, guardErr(id)(path, err)
}

// readGuarded reads whole, up to limit bytes, the file name of the folder dirfd through the
// guarded open, its errors coded as the open's: a read that fails is upload.unreadable.
func readGuarded(dirfd int, name, path, id string, limit int64) ([]byte, error) {
	b, err := readFileAt(dirfd, name, path, limit, guarded(path, id))
	return b, guardErr(id)(path, err)
}

// openFileAt opens the file name of the folder dirfd with flags (O_RDONLY; O_RDWR|O_CREAT for a
// lock file, made 0600), never following a link nor blocking on a FIFO, and keeps it only when
// check takes its stat: the one way the store opens a file it did not just make. path names it.
// The open's error is the system's, a refusal check's.
func openFileAt(dirfd int, name, path string, flags int, check func(*unix.Stat_t) error) (*os.File, error) {
	fd, err := unix.Openat(dirfd, name, flags|openFlags, uint32(FileMode))
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err = unix.Fstat(fd, &st); err == nil {
		if err = check(&st); err == nil {
			err = unix.SetNonblock(fd, false) // what check took may be read as any file
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil // owns fd
}

// readFileAt reads whole, up to limit bytes, the file name of the folder dirfd that check takes
// (openFileAt). The error is the system's, or check's.
func readFileAt(dirfd int, name, path string, limit int64, check func(*unix.Stat_t) error) ([]byte, error) {
	f, err := openFileAt(dirfd, name, path, unix.O_RDONLY, check)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// regular is the check of a file that need only be a regular file (openFileAt).
func regular(st *unix.Stat_t) error {
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG {
		return errNotRegular
	}
	return nil
}

var errNotRegular = errors.New("not a regular file")

// guarded is the guarded open's check of the file of upload id at path (store.GuardedWhy), else
// upload.unreadable.
func guarded(path, id string) func(*unix.Stat_t) error {
	return func(st *unix.Stat_t) error {
		if why := store.GuardedWhy(statOf("", st)); why != "" {
			return fault.Errorf(fault.UploadUnreadable, "upload %s: %s: %s", id, path, why)
		}
		return nil
	}
}
