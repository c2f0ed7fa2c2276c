//go:build unix

package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// The local side of a sweep (the policy, which uploads are stale, is package sweep's) is
// docs/store.md's "The lock": sweep.lock held for the whole run, the marker lock exclusive for one
// batch at a time, doomed folders renamed into the trash and removed outside the lock, nothing
// followed.

// sweepBatch is how many candidates are decided per hold of the marker lock.
const sweepBatch = 256

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

// list returns every upload of the store, the rules written once (store.ListOn) over the
// primitives below: the finished ones read through the guarded reads, the unfinished ones from
// their partials. A store that does not exist is empty.
func (s *localStore) list() (*store.Listing, error) {
	d := &storeDirs{s: s, storefd: -1, partfd: -1, trashfd: -1}
	defer d.close()
	return store.ListOn(context.Background(), d)
}

// storeDirs are the store's folder and its partials, open for one listing or one sweep, and the
// trash for a sweep (-1: not open, or not there). As a listing's store.ListBackend it reads the
// uploads through them.
type storeDirs struct {
	s                        *localStore
	storefd, partfd, trashfd int
}

// open opens them, making nothing: false when the store is not there.
func (d *storeDirs) open() (bool, error) {
	fd, err := d.s.openIfThere()
	if err != nil || fd < 0 {
		return false, err
	}
	d.storefd = fd
	d.partfd, err = d.s.openIfThere(InternalDir, partialDir)
	return true, err
}

func (d *storeDirs) close() {
	for _, fd := range []*int{&d.storefd, &d.partfd, &d.trashfd} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

func (d *storeDirs) ListProperties() store.ListProperties {
	return store.ListProperties{Jobs: workers()}
}

func (d *storeDirs) ListTop(context.Context) ([]store.TopEntry, string, bool, error) {
	s := d.s
	if there, err := d.open(); !there || err != nil {
		return nil, s.Dir, false, err
	}
	top, err := listAt(d.storefd, s.Dir)
	return top, s.Dir, err == nil, err
}

// listAt lists the folder fd (at dir) as the listing engine takes it, typed by getdents.
func listAt(fd int, dir string) ([]store.TopEntry, error) {
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

// ReadUpload reads a finished upload's metadata and marker through the guarded reads; whatever
// keeps it from reading as an upload is skipped, never a failure.
func (d *storeDirs) ReadUpload(_ context.Context, c store.Candidate) (*store.UploadMeta, error) {
	skip := func(err error) (*store.UploadMeta, error) {
		return nil, fault.Errorf(fault.UploadUnreadable, "%s", fault.AsError(err, fault.UploadUnreadable).Message)
	}
	dirfd, err := openDirAt(d.storefd, c.ID)
	if err != nil {
		return skip(guardErr(c.ID)(d.s.UploadDir(c.ID), err))
	}
	defer unix.Close(dirfd)
	meta, err := d.s.readMetaAt(dirfd, c.ID)
	if err != nil {
		return skip(err)
	}
	used, foreign, err := d.s.lastUsedAt(dirfd, c.ID)
	if err != nil {
		return skip(err)
	}
	return &store.UploadMeta{Info: &meta.Info, Recorded: meta.ID, LastUsed: used, Folder: meta.Kind == store.KindFolder, Files: meta.Files,
		ForeignMarker: foreign}, nil
}

func (d *storeDirs) ListPartials(context.Context) ([]store.TopEntry, string, error) {
	dir := d.s.internal(partialDir)
	if d.partfd < 0 {
		return nil, dir, nil
	}
	top, err := listAt(d.partfd, dir)
	return top, dir, err
}

func (d *storeDirs) ReadPartial(_ context.Context, id string) (store.UnfinishedState, error) {
	r, err := d.s.readPartial(d.partfd, id, false, regularPartial)
	return r.UnfinishedState, err
}

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

// sweep opens the store's folders for the sweep (a partial begun after this is not stale yet:
// Recheck finds it gone) and takes the one-sweep lock, waiting at most wait. A dry run takes
// nothing (it writes nothing, the lock included); a store that does not exist has nothing to sweep.
func (s *localStore) sweep(wait time.Duration, dryRun bool) (*sweeper, error) {
	sw := &sweeper{storeDirs: &storeDirs{s: s, storefd: -1, partfd: -1, trashfd: -1}, dry: dryRun}
	there, err := sw.open()
	if err == nil && there && !dryRun {
		if sw.lock, err = s.lock(sweepLock, unix.LOCK_EX, wait); err == nil {
			err = sw.openTrash()
		}
	}
	if err != nil {
		sw.Close()
		return nil, err
	}
	return sw, nil
}

// openTrash opens the trash, on the store's file system, and removes what a crashed sweep left
// there.
func (sw *sweeper) openTrash() error {
	fd, err := sw.s.openDir(lockErr, true, InternalDir, trashDir)
	if err != nil {
		return err
	}
	sw.trashfd = fd
	var top fsID
	sw.root, err = fsOf(fd)
	if err == nil {
		top, err = fsOf(sw.storefd)
	}
	if err != nil {
		return storeErr(sw.s.internal(trashDir), err)
	}
	if top != sw.root {
		return fault.Errorf(fault.UploadUnreadable, "store %s: its trash is on another file system; nothing removed", sw.s.Dir)
	}
	sw.emptyTrash()
	return nil
}

// sweeper is a running sweep of a local store, its store.SweepBackend: it holds sweep.lock and
// the store's folders until Close.
type sweeper struct {
	*storeDirs
	dry  bool
	lock *heldLock
	root fsID // the store's file system
}

// Close releases the sweep lock and the folders.
func (sw *sweeper) Close() error {
	sw.close()
	return sw.lock.Unlock()
}

// Remove is store.Sweeper's Remove, the re-check written once (store.SweepRemove) over the
// primitives below: see there, and the protocol above.
func (sw *sweeper) Remove(ctx context.Context, cands []store.Entry, stale func(store.Entry) bool, each func(store.Entry, store.Outcome, error) error) error {
	if sw.storefd < 0 || len(cands) == 0 {
		return ctx.Err()
	}
	if err := store.SweepRemove(ctx, sw, sw.dry, cands, stale, each); err != nil || sw.dry {
		return err
	}
	sw.pruneIndex()
	return nil
}

func (sw *sweeper) SweepProperties() store.SweepProperties {
	return store.SweepProperties{Batch: sweepBatch, Jobs: workers(), Undo: true}
}

// Exclude takes the marker lock exclusive: a use waits for one batch at most.
func (sw *sweeper) Exclude(context.Context) (func(), error) {
	return sw.s.hold(unix.LOCK_EX)
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

// Recheck reads a finished upload's marker, or an unfinished upload's data file, taking its
// writer's lock: held until the entry is renamed, so no chunk lands in a folder on its way out.
func (sw *sweeper) Recheck(_ context.Context, c store.Entry) (store.Reread, error) {
	if c.Finished {
		dirfd, err := openDirAt(sw.storefd, c.ID)
		if replaced(err) {
			return store.Reread{}, store.NotFinished(c.ID, sw.s.Dir)
		} else if err != nil { // not there: upload.missing, gone
			return store.Reread{}, guardErr(c.ID)(sw.s.UploadDir(c.ID), err)
		}
		defer unix.Close(dirfd)
		used, _, err := sw.s.lastUsedAt(dirfd, c.ID)
		return store.Reread{Used: used}, err
	}
	r, err := sw.s.readPartial(sw.partfd, c.ID, true, regularPartial)
	if replaced(err) {
		return store.Reread{}, store.NotUnfinished(c.ID, sw.s.Dir)
	}
	// Finished since it was listed: what is left of the partial is the finish's leftover, not an
	// upload to report (the finished upload is judged as one on the next sweep). A finish renames
	// its folder into the store before the partial's data goes, so this look, after the one at
	// the data, cannot miss it.
	var st unix.Stat_t
	if err == nil && unix.Fstatat(sw.storefd, c.ID, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		err = store.NotUnfinished(c.ID, sw.s.Dir)
	}
	return store.Reread{State: r.UnfinishedState, Release: r.release}, err
}

// replaced reports whether opening an entry's folder failed because a link or a file stands in
// its place (since the listing: the entry is no upload any more, gone, as the listing would skip
// it now).
func replaced(err error) bool { return errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) }

// home is the folder that keeps the entry's folder, and the path of that.
func (sw *sweeper) home(e store.Entry) (int, string) {
	if e.Finished {
		return sw.storefd, sw.s.UploadDir(e.ID)
	}
	return sw.partfd, sw.s.partialDir(e.ID)
}

// Doom renames the entry's folder into the trash, in one rename, under its id: no two entries of
// a sweep have one id (a partial beside the finished upload of its id is no entry).
func (sw *sweeper) Doom(_ context.Context, it *store.SweepItem) error {
	from, path := sw.home(it.Entry)
	if err := renameNoReplaceAt(from, it.Entry.ID, sw.trashfd, it.Entry.ID); err != nil {
		return fmt.Errorf("%s: moving into the trash: %w", path, err)
	}
	return nil
}

// Restore moves a doomed entry back from the trash to its place, as if the sweep had not chosen it.
func (sw *sweeper) Restore(it *store.SweepItem) {
	to, _ := sw.home(it.Entry)
	renameNoReplaceAt(sw.trashfd, it.Entry.ID, to, it.Entry.ID)
}

// Drop removes a doomed entry from the trash. The last use Recheck read is the folder's last: it
// read it under the marker lock, which no use writes without, and after Doom no use finds it.
func (sw *sweeper) Drop(_ context.Context, it *store.SweepItem) error {
	if err := removeAt(sw.trashfd, it.Entry.ID, &sw.root); err != nil {
		return fault.Errorf(fault.UploadUnreadable, "%s: removing upload %s: %v (left in the trash)", sw.s.internal(trashDir, it.Entry.ID), it.Entry.ID, err)
	}
	return nil
}

// emptyTrash removes what a crashed sweep left in the trash. What cannot be removed stays for the
// next.
func (sw *sweeper) emptyTrash() {
	names, err := namesAt(sw.trashfd, sw.s.internal(trashDir))
	if err == nil {
		for _, n := range names {
			removeAt(sw.trashfd, n, &sw.root)
		}
	}
}

// DropLeftover removes the partial folder a finish killed after its rename left beside the
// finished upload of its id: only an info.json (the local listing finds no other leftover).
func (sw *sweeper) DropLeftover(_ context.Context, l store.Leftover) error {
	return sw.s.removePartial(l.ID, false)
}
