//go:build unix

package local

import (
	"context"
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
	return uploadFolder{d.s, fd, id}, nil
}

func (u uploadFolder) ReadMeta() (*store.UploadMeta, error) {
	meta, err := u.s.readMetaAt(u.fd, u.id)
	if err != nil {
		return nil, err
	}
	return &store.UploadMeta{Info: &meta.Info, Recorded: meta.ID, Folder: meta.Kind == store.KindFolder, Files: meta.Files}, nil
}

func (d *storeDirs) ReadPartial(id string, hold bool) (store.UnfinishedState, func(), error) {
	r, err := d.s.readPartial(d.partfd, id, hold, store.RegularPartial)
	return r.UnfinishedState, r.Release, err
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

// readPartial is the reading of the unfinished upload id in the partials folder partfd (-1:
// none) for the listing, the sweep and Status (store.ReadPartial); with lock set the writer's
// lock is kept when free.
func (s *localStore) readPartial(partfd int, id string, lock bool, check func(*store.PartRead) error) (*store.PartRead, error) {
	return store.ReadPartial(id, s.Dir, s.partialDir(id), lock, func() (store.PartFolder, error) { return s.openPart(partfd, id, false) }, check)
}

// treeBytesAt is what the files of the tree of the folder upload whose partial is open as dirfd
// hold and when the newest was written (store.TreeBytes), each folder listed as a finished
// upload's (store.ListFileDir: never following a link, never entering another file system than the
// tree's top); 0 when it has none, and not ok when it has no tree folder.
func treeBytesAt(dirfd int) (int64, time.Time, bool) {
	top, err := openDirAt(dirfd, partialTree)
	if err != nil {
		return 0, time.Time{}, false
	}
	defer unix.Close(top)
	root, err := fsOf(top)
	if err != nil {
		return 0, time.Time{}, true
	}
	n, newest := store.TreeBytes(false, func(dir string) ([]store.TreeEntry, error) {
		return store.ListFileDir(fdDirs{fd: top, root: root, code: sysErr}, dir)
	})
	return n, newest, true
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
