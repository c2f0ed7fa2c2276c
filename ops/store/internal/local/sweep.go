//go:build unix

package local

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// The listing and the sweep of a local store are store.ListFolders and store.SweepFolder (the
// policy, which uploads are stale, is package sweep's) over its folders, storeDirs: the store's,
// the partials', the trash. The sweep's locks are sweep.lock for the whole run and the marker lock
// exclusive for one batch at a time (docs/store.md's "The lock").

// workers is how many entries are judged or removed at once: the work is system calls.
func workers() int { return max(4, 4*runtime.NumCPU()) }

// readDirAt lists the folder open as fd with each entry's type from getdents (no stat, no
// follow), sorted by name. fd stays the caller's: the listing works on a duplicate.
func readDirAt(fd int, path string) ([]os.DirEntry, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	d := os.NewFile(uintptr(dup), path) // d owns dup
	defer d.Close()
	if _, err := d.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	ents, err := d.ReadDir(-1)
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	return ents, err
}

// namesAt is the names readDirAt lists, for a caller that reads no type.
func namesAt(fd int, path string) ([]string, error) {
	ents, err := readDirAt(fd, path)
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names, err
}

// openDirAt opens name in the folder parent as a real folder, never following a link.
func openDirAt(parent int, name string) (int, error) {
	for {
		fd, err := unix.Openat(parent, name, noFollowDir, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// list returns every upload of the store, the rules written once (store.ListFolders) over the
// store's folders. A store that does not exist is empty.
func (s *localStore) list() (*store.Listing, error) {
	return store.ListFolders(context.Background(), s.dirs(), workers())
}

// sweep begins a sweep of the store, the rules written once (store.SweepFolder) over the store's
// folders.
func (s *localStore) sweep(wait time.Duration, dryRun bool) (*store.FolderSweeper, error) {
	return store.SweepFolder(s.dirs(), workers(), wait, dryRun)
}

// storeDirs are the store's folder and its partials, open for one listing or one sweep, and the
// trash for a sweep (-1: not open, or not there): store.SweepFolders.
type storeDirs struct {
	s                        *localStore
	storefd, partfd, trashfd int
	root                     fsID // the trash's file system, once it is open
}

func (s *localStore) dirs() *storeDirs { return &storeDirs{s: s, storefd: -1, partfd: -1, trashfd: -1} }

// sweptDirs are the folders of store.SweptFolder, below the store's.
var sweptDirs = [...][]string{store.StoreFolder: nil, store.PartialsFolder: {InternalDir, partialDir}, store.TrashFolder: {InternalDir, trashDir}}

func (d *storeDirs) fd(f store.SweptFolder) int { return [...]int{d.storefd, d.partfd, d.trashfd}[f] }

func (d *storeDirs) Path(f store.SweptFolder, name string) string {
	return filepath.Join(d.s.Dir, filepath.Join(sweptDirs[f]...), name)
}

func (d *storeDirs) Open() (bool, error) {
	fd, err := d.s.openIfThere()
	if err != nil || fd < 0 {
		return false, err
	}
	d.storefd = fd
	d.partfd, err = d.s.openIfThere(sweptDirs[store.PartialsFolder]...)
	return true, err
}

func (d *storeDirs) Close() {
	for _, fd := range []*int{&d.storefd, &d.partfd, &d.trashfd} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

// List lists the folder typed by getdents.
func (d *storeDirs) List(f store.SweptFolder) ([]store.TopEntry, error) {
	fd, dir := d.fd(f), d.Path(f, "")
	if fd < 0 {
		return nil, nil
	}
	ents, err := readDirAt(fd, dir)
	if err != nil {
		return nil, fault.Errorf(fault.UploadUnreadable, "%s: %v", dir, err)
	}
	top := make([]store.TopEntry, len(ents))
	for i, e := range ents {
		link := e.Type()&os.ModeSymlink != 0
		top[i] = store.TopEntry{Name: e.Name(), Dir: e.IsDir() && !link, Link: link}
	}
	return top, nil
}

func (d *storeDirs) OpenUpload(id string) (store.SweptUpload, error) {
	fd, err := openDirAt(d.storefd, id)
	if err != nil {
		return nil, guardErr(id)(d.s.UploadDir(id), err)
	}
	return sweptUpload{d.s, fd, id}, nil
}

// sweptUpload is a finished upload's folder, open as fd, read through the guarded reads.
type sweptUpload struct {
	s  *localStore
	fd int
	id string
}

func (u sweptUpload) ReadMeta() (*store.UploadMeta, error) {
	meta, err := u.s.readMetaAt(u.fd, u.id)
	if err != nil {
		return nil, err
	}
	return &store.UploadMeta{Info: &meta.Info, Recorded: meta.ID, Folder: meta.Kind == store.KindFolder, Files: meta.Files}, nil
}

func (u sweptUpload) LastUsed() (time.Time, bool, error) { return u.s.lastUsedAt(u.fd, u.id) }
func (u sweptUpload) Close()                             { unix.Close(u.fd) }

func (d *storeDirs) ReadPartial(id string, hold bool) (store.UnfinishedState, func(), error) {
	r, err := d.s.readPartial(d.partfd, id, hold, regularPartial)
	return r.UnfinishedState, r.release, err
}

func (d *storeDirs) Has(id string) bool {
	var st unix.Stat_t
	return unix.Fstatat(d.storefd, id, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

func (d *storeDirs) LockSweep(wait time.Duration) (func() error, error) {
	lk, err := d.s.lock(sweepLock, unix.LOCK_EX, wait)
	if err != nil {
		return nil, err
	}
	return lk.Unlock, nil
}

func (d *storeDirs) ExcludeUses() (func(), error) { return d.s.hold(unix.LOCK_EX) }

func (d *storeDirs) OpenTrash() (bool, error) {
	fd, err := d.s.openDir(lockErr, true, sweptDirs[store.TrashFolder]...)
	if err != nil {
		return false, err
	}
	d.trashfd = fd
	var top fsID
	d.root, err = fsOf(fd)
	if err == nil {
		top, err = fsOf(d.storefd)
	}
	if err != nil {
		return false, storeErr(d.Path(store.TrashFolder, ""), err)
	}
	return top == d.root, nil
}

func (d *storeDirs) Move(from, to store.SweptFolder, name string) error {
	return renameNoReplaceAt(d.fd(from), name, d.fd(to), name)
}

func (d *storeDirs) Remove(f store.SweptFolder, name string) error {
	if f == store.PartialsFolder {
		return d.s.removePartial(name, false)
	}
	return removeAt(d.fd(f), name, &d.root)
}

func (d *storeDirs) PruneIndex() { d.pruneIndex() }

// readPartial is the one reading of a partial (readPartialAt) for the listing, the sweep and
// Status, which wait for no writer: a writer holding the lock makes the upload busy. A folder
// upload's bytes are its tree's, summed by the engine (store.TreeBytes). With lock set, the
// writer's lock is taken and kept when free: release drops it. What r holds open is closed. One
// that is not there (no partials folder, no folder or data of its own, a file check finds with no
// link left: finished, aborted or swept since) is upload.missing, which each engine reads as gone.
// Something else in its folder's place (ENOTDIR: a link, a file) is the caller's to judge.
func (s *localStore) readPartial(partfd int, id string, lock bool, check func(*partialRead) error) (r *partialRead, err error) {
	missing := fault.Errorf(fault.UploadMissing, "upload %s: no such upload in store %s", id, s.Dir)
	if partfd < 0 {
		return &partialRead{dirfd: -1, fd: -1, outfd: -1}, missing
	}
	r, err = s.readPartialAt(partfd, id, unix.O_RDONLY|openFlags, unix.LOCK_EX|unix.LOCK_NB, check)
	// A folder upload's data file is only its lock: the bytes are in its tree (which tells one
	// whose info.json is gone), and it was last written when the newest of them was.
	if err == nil && r.fd >= 0 && (r.meta != nil && r.meta.Folder || r.meta == nil && isEntry(r.dirfd, partialTree, true)) {
		r.Tree(treeBytesAt(r.dirfd))
	}
	if fd := r.fd; err == nil && lock && fd >= 0 && !r.Busy {
		r.release, r.fd = func() { unix.Close(fd) }, -1
	}
	r.close()
	if errors.Is(err, unix.ENOENT) || errors.Is(err, errGone) {
		err = missing
	}
	return r, err
}

// regularPartial is the check of a partial read for the listing and the sweep (readPartialAt),
// which read it whatever its info.json says: only a regular file is read.
func regularPartial(r *partialRead) error {
	if r.fd >= 0 && uint32(r.st.Mode)&unix.S_IFMT != unix.S_IFREG {
		return errors.New("data is not a regular file")
	}
	return nil
}

// treeBytesAt is what the files of the tree of the folder upload whose partial is open as dirfd
// hold and when the newest was written (store.TreeBytes), each folder listed as a finished
// upload's (store.ListFileDir: never following a link, never entering another file system than the
// tree's top); 0 when it has none.
func treeBytesAt(dirfd int) (int64, time.Time) {
	top, err := openDirAt(dirfd, partialTree)
	if err != nil {
		return 0, time.Time{}
	}
	defer unix.Close(top)
	root, err := fsOf(top)
	if err != nil {
		return 0, time.Time{}
	}
	return store.TreeBytes(false, func(dir string) ([]store.TreeEntry, error) {
		return store.ListFileDir(fdDirs{fd: top, root: root, code: sysErr}, dir)
	})
}

// hold takes the marker lock with how (LOCK_SH: a use; LOCK_EX: a sweep's batch), waiting at most
// markerWait, and returns its release.
func (s *localStore) hold(how int) (func(), error) {
	lk, err := s.lock(lockName, how, markerWait)
	if err != nil {
		return nil, err
	}
	return func() { lk.Unlock() }, nil
}
