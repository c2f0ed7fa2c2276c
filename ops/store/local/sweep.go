//go:build unix

package local

import (
	"context"
	"encoding/json"
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

// The local side of a sweep (the policy, which uploads are stale, is package sweep's):
//
// A sweep holds STORE/.attachctl/sweep.lock for its whole run (one sweep at a time). Remove takes
// the marker lock exclusive for one batch of candidates at a time, re-reads each (a finished
// upload's .used marker; an unfinished upload's data file and its writer's flock), asks the
// policy again, renames the doomed folders into STORE/.attachctl/trash in one rename each, and
// releases the lock; the trash is emptied outside the lock. So a use waits for one batch at most,
// and a use that comes after a rename finds the upload missing rather than writing into a doomed
// folder. What a crashed sweep left in the trash is removed by the next one.
//
// Nothing is followed: entries are judged by getdents' type and fstatat without following,
// opened O_NOFOLLOW, renamed (which moves a link, never its target) and removed by a walk on
// folder descriptors that never enters another file system.

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

// openDirAt opens name in the folder parent as a real folder, never following a link.
func openDirAt(parent int, name string) (int, error) {
	for {
		fd, err := unix.Openat(parent, name, noFollowDir, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// List returns every upload of the store: the finished ones (through the guarded reads) and the
// unfinished ones, in id order, and the entries it does not recognise. A store that does not
// exist is empty. A partial left beside the finished upload of the same id (by a finish killed
// after its rename) is not listed: it is no upload.
func (s *localStore) List() (*store.Listing, error) {
	l := &store.Listing{}
	storefd, err := unix.Open(s.Dir, noFollowDir, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return l, nil
		}
		return nil, lockErr(s.Dir, err)
	}
	defer unix.Close(storefd)
	ents, err := readDirAt(storefd, s.Dir)
	if err != nil {
		return nil, fault.Errorf(fault.UploadUnreadable, "store %s: %v", s.Dir, err)
	}
	var cands []store.Candidate
	for _, e := range ents {
		name := e.Name()
		path := s.Dir + "/" + name
		switch {
		case name == InternalDir && e.IsDir():
		case ValidID(name) != nil:
			l.Skipped = append(l.Skipped, store.Skip{Path: path, Why: "not an upload id"})
		case e.Type()&os.ModeSymlink != 0:
			l.Skipped = append(l.Skipped, store.Skip{Path: path, Why: "a symlink"})
		case !e.IsDir():
			l.Skipped = append(l.Skipped, store.Skip{Path: path, Why: "not a folder"})
		default:
			cands = append(cands, store.Candidate{ID: name, Path: path})
		}
	}
	metas, skips, err := store.RecognizeUploads(context.Background(), cands, workers(), func(_ context.Context, i int) (*store.UploadMeta, error) {
		meta, used, _, err := s.UploadState(cands[i].ID)
		if err != nil { // whatever keeps it from reading as an upload: skipped, never a failure
			return nil, fault.Errorf(fault.UploadUnreadable, "%s", fault.AsError(err, fault.UploadUnreadable).Message)
		}
		return &store.UploadMeta{Info: meta, Recorded: meta.ID, LastUsed: used}, nil
	})
	if err != nil {
		return nil, err
	}
	l.Skipped = append(l.Skipped, skips...)
	sort.Slice(l.Skipped, func(i, j int) bool { return l.Skipped[i].Path < l.Skipped[j].Path })
	finished := map[string]bool{}
	for i, m := range metas {
		if m != nil {
			id := cands[i].ID
			l.Entries = append(l.Entries, store.Entry{ID: id, Name: m.Info.Name, Size: m.Info.Size, Finished: true, Made: m.Info.Made, LastUsed: m.LastUsed})
			finished[id] = true
		}
	}
	parts, skips, err := s.listPartials(storefd, finished)
	if err != nil {
		return nil, err
	}
	l.Entries = append(l.Entries, parts...)
	l.Skipped = append(l.Skipped, skips...)
	sort.Slice(l.Entries, func(i, j int) bool { return l.Entries[i].ID < l.Entries[j].ID })
	return l, nil
}

// openPartialsNoCreate opens STORE/.attachctl/partial without creating anything; -1 when it is
// not there.
func (s *localStore) openPartialsNoCreate(storefd int) (int, error) {
	idir, err := openDirAt(storefd, InternalDir)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return -1, nil
		}
		return -1, lockErr(s.internal(), err)
	}
	defer unix.Close(idir)
	fd, err := openDirAt(idir, partialDir)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return -1, nil
		}
		return -1, lockErr(s.internal(partialDir), err)
	}
	return fd, nil
}

// listPartials lists the unfinished uploads, leaving out the ids in finished.
func (s *localStore) listPartials(storefd int, finished map[string]bool) ([]store.Entry, []store.Skip, error) {
	partfd, err := s.openPartialsNoCreate(storefd)
	if err != nil || partfd < 0 {
		return nil, nil, err
	}
	defer unix.Close(partfd)
	dir := s.internal(partialDir)
	ents, err := readDirAt(partfd, dir)
	if err != nil {
		return nil, nil, fault.Errorf(fault.UploadUnreadable, "%s: %v", dir, err)
	}
	var list []store.Entry
	var skips []store.Skip
	for _, e := range ents {
		path := dir + "/" + e.Name()
		if ValidID(e.Name()) != nil || !e.IsDir() || e.Type()&os.ModeSymlink != 0 {
			skips = append(skips, store.Skip{Path: path, Why: "not an unfinished upload"})
			continue
		}
		if finished[e.Name()] {
			continue
		}
		pe, err := judgePartialAt(partfd, e.Name(), false)
		if err != nil {
			if !errors.Is(err, unix.ENOENT) {
				skips = append(skips, store.Skip{Path: path, Why: "unfinished upload: " + err.Error()})
			}
			continue
		}
		list = append(list, pe)
	}
	return list, skips, nil
}

// judgePartialAt reads what a sweep needs of the unfinished upload id in the partial folder
// partfd: its name and begin time (info.json, best effort), and the size and mtime of the file
// its writer locks (data, or out/<name> while a finish moves it), or the folder's mtime when it
// has no data file. Busy tells whether a writer holds it. With lock set, the writer's lock is
// taken and kept: the returned release drops it (nil when there was nothing to lock).
func judgePartialAt(partfd int, id string, lock bool) (store.Entry, error) {
	e, release, err := judgePartialLocked(partfd, id, lock)
	if release != nil {
		release()
	}
	return e, err
}

func judgePartialLocked(partfd int, id string, lock bool) (store.Entry, func(), error) {
	e := store.Entry{ID: id}
	dirfd, err := openDirAt(partfd, id)
	if err != nil {
		return e, nil, err
	}
	defer unix.Close(dirfd)
	folder := false
	if meta, err := readPartialMetaAt(dirfd); err == nil {
		e.Name, e.Made, e.Batch, folder = meta.Name, meta.Created, meta.Batch, meta.Folder
	}
	const flags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	fd, err := unix.Openat(dirfd, partialData, flags, 0)
	if errors.Is(err, unix.ENOENT) && e.Name != "" {
		if out, oerr := unix.Openat(dirfd, partialOut, flags|unix.O_DIRECTORY, 0); oerr == nil {
			fd, err = unix.Openat(out, e.Name, flags, 0)
			unix.Close(out)
		}
	}
	var st unix.Stat_t
	if errors.Is(err, unix.ENOENT) { // no data: a partial just begun, or what a crash left
		if err := unix.Fstat(dirfd, &st); err != nil {
			return e, nil, err
		}
		e.LastUsed = timespec(st.Mtim)
		if e.Made.IsZero() {
			e.Made = e.LastUsed
		}
		return e, nil, nil
	}
	if err != nil {
		return e, nil, err
	}
	f := os.NewFile(uintptr(fd), partialData) // f owns fd: closing it drops a lock we took
	got, err := tryFlock(fd)
	if err != nil {
		f.Close()
		return e, nil, err
	}
	e.Busy = !got
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return e, nil, err
	}
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG {
		f.Close()
		return e, nil, fmt.Errorf("data is not a regular file")
	}
	e.Size, e.LastUsed = st.Size, timespec(st.Mtim)
	if folder { // its data file is only its lock: the bytes are in its tree
		e.Size = treeBytesAt(dirfd)
	}
	if e.Made.IsZero() {
		e.Made = e.LastUsed
	}
	if lock && got {
		return e, func() { f.Close() }, nil
	}
	f.Close()
	return e, nil, nil
}

// treeBytesAt is how many bytes the files of an unfinished folder upload hold so far: those under
// partialTree in its partial, open as dirfd. Best effort (what cannot be read counts nothing);
// no link is followed and no other file system entered.
func treeBytesAt(dirfd int) int64 {
	top, err := openDirAt(dirfd, partialTree)
	if err != nil {
		return 0
	}
	root, err := fsOf(top)
	if err != nil {
		unix.Close(top)
		return 0
	}
	var walk func(fd int) int64
	walk = func(fd int) int64 {
		defer unix.Close(fd)
		ents, _ := readDirAt(fd, partialTree)
		var n int64
		for _, ent := range ents {
			var st unix.Stat_t
			if unix.Fstatat(fd, ent.Name(), &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue
			}
			switch uint32(st.Mode) & unix.S_IFMT {
			case unix.S_IFREG:
				n += st.Size
			case unix.S_IFDIR:
				sub, err := openDirAt(fd, ent.Name())
				if err != nil {
					continue
				}
				if id, err := fsOf(sub); err != nil || id != root {
					unix.Close(sub)
					continue
				}
				n += walk(sub)
			}
		}
		return n
	}
	return walk(top)
}

// readPartialMetaAt reads info.json of the unfinished upload open as dirfd.
func readPartialMetaAt(dirfd int) (*partialMeta, error) {
	fd, err := unix.Openat(dirfd, partialInfo, unix.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), partialInfo) // f owns fd
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG {
		return nil, errors.New(partialInfo + ": not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil, err
	}
	var m partialMeta
	if err := json.Unmarshal(b, &m); err != nil || ValidName(m.Name) != nil || m.Size < -1 {
		return nil, errors.New(partialInfo + ": damaged")
	}
	return &m, nil
}

// Sweep takes the one-sweep lock, waiting at most wait. A dry run takes it only when the store
// has one already (it creates nothing); a store that does not exist has nothing to sweep.
func (s *localStore) Sweep(wait time.Duration, dryRun bool) (*sweeper, error) {
	sw := &sweeper{s: s, dry: dryRun, trashfd: -1}
	if _, err := os.Lstat(s.Dir); errors.Is(err, os.ErrNotExist) {
		sw.none = true
		return sw, nil
	}
	var err error
	if dryRun {
		sw.lock, err = s.lockIfThere(sweepLock, unix.LOCK_EX, wait)
	} else {
		sw.lock, err = s.LockSweep(wait)
	}
	if err != nil {
		return nil, err
	}
	if !dryRun {
		if err := sw.openTrash(); err != nil {
			sw.Close()
			return nil, err
		}
	}
	return sw, nil
}

// openTrash opens the trash and removes what a crashed sweep left there.
func (sw *sweeper) openTrash() error {
	fd, err := sw.s.OpenInternalDir(trashDir)
	if err != nil {
		return err
	}
	sw.trashfd = fd
	root, err := fsOf(fd)
	if err != nil {
		return storeErr(sw.s.internal(trashDir), err)
	}
	sw.root = root
	sw.emptyTrash(root)
	return nil
}

// sweeper is a running sweep of a local store: it holds sweep.lock until Close.
type sweeper struct {
	s       *localStore
	dry     bool
	none    bool // the store does not exist
	lock    *heldLock
	trashfd int  // the trash, in a real sweep
	root    fsID // the store's file system
}

// Close releases the sweep lock.
func (sw *sweeper) Close() error {
	if sw.trashfd >= 0 {
		unix.Close(sw.trashfd)
		sw.trashfd = -1
	}
	return sw.lock.Unlock()
}

// Remove is store.Sweeper's Remove, the re-check written once (store.SweepRemove) over the
// primitives below: see there, and the protocol above.
func (sw *sweeper) Remove(ctx context.Context, cands []store.Entry, stale func(store.Entry) bool, each func(store.Entry, store.Outcome, error) error) error {
	if sw.none || len(cands) == 0 {
		return ctx.Err()
	}
	s := sw.s
	storefd, err := unix.Open(s.Dir, noFollowDir, 0)
	if err != nil {
		return lockErr(s.Dir, err)
	}
	defer unix.Close(storefd)
	partfd, err := s.openPartialsNoCreate(storefd)
	if err != nil {
		return err
	}
	if partfd >= 0 {
		defer unix.Close(partfd)
	}
	r := &sweepRun{sw: sw, storefd: storefd, partfd: partfd}
	if !sw.dry {
		root, err := fsOf(storefd)
		if err != nil {
			return lockErr(s.Dir, err)
		}
		if root != sw.root {
			return fault.Errorf(fault.UploadUnreadable, "store %s: its trash is on another file system; nothing removed", s.Dir)
		}
	}
	if err := store.SweepRemove(ctx, r, sw.dry, cands, stale, each); err != nil || sw.dry {
		return err
	}
	s.pruneIndex(storefd)
	return nil
}

// sweepRun is one Remove's store.SweepBackend: the store and its partials, open.
type sweepRun struct {
	sw              *sweeper
	storefd, partfd int
}

func (r *sweepRun) SweepProperties() store.SweepProperties {
	return store.SweepProperties{Batch: sweepBatch, Jobs: workers(), Undo: true}
}

// Exclude takes the marker lock exclusive: a use waits for one batch at most.
func (r *sweepRun) Exclude(context.Context) (func(), error) {
	lk, err := r.sw.s.LockExclusive(max(markerWait, 0))
	if err != nil {
		return nil, err
	}
	return func() { lk.Unlock() }, nil
}

// Recheck reads a finished upload's marker, or an unfinished upload's data file, taking its
// writer's lock: held until the entry is renamed, so no chunk lands in a folder on its way out.
func (r *sweepRun) Recheck(_ context.Context, c store.Entry) (*store.SweepItem, error) {
	s := r.sw.s
	if c.Finished {
		dirfd, err := openDirAt(r.storefd, c.ID)
		if err != nil {
			if errors.Is(err, unix.ENOENT) {
				return &store.SweepItem{Entry: c, Gone: true}, nil
			}
			return nil, guardErr(s.UploadDir(c.ID), c.ID, err)
		}
		used, _, err := lastUsedAt(dirfd, s.UploadDir(c.ID)+"/"+UsedName)
		unix.Close(dirfd)
		if err != nil {
			return nil, err
		}
		c.LastUsed = used
		return &store.SweepItem{Entry: c}, nil
	}
	if r.partfd < 0 {
		return &store.SweepItem{Entry: c, Gone: true}, nil
	}
	fresh, release, err := judgePartialLocked(r.partfd, c.ID, true)
	it := &store.SweepItem{Entry: fresh, Release: release}
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			it.Entry, it.Gone = c, true
			return it, nil
		}
		if release != nil {
			release()
		}
		return nil, err
	}
	// Finished since it was listed: what is left of the partial is the finish's leftover, not an
	// upload to report (the finished upload is judged as one on the next sweep). A finish renames
	// its folder into the store before the partial's data goes, so this look, after the one at
	// the data, cannot miss it.
	var st unix.Stat_t
	if unix.Fstatat(r.storefd, c.ID, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		it.Entry, it.Gone = c, true
	}
	return it, nil
}

// trashName is the entry's name in the trash.
func trashName(e store.Entry) string {
	if e.Finished {
		return e.ID
	}
	return "partial-" + e.ID
}

// Doom renames the entry's folder into the trash, in one rename.
func (r *sweepRun) Doom(_ context.Context, it *store.SweepItem) error {
	e := it.Entry
	from, path := r.storefd, r.sw.s.UploadDir(e.ID)
	if !e.Finished {
		from, path = r.partfd, r.sw.s.partialDir(e.ID)
	}
	if err := renameNoReplaceAt(from, e.ID, r.sw.trashfd, trashName(e)); err != nil {
		return fmt.Errorf("%s: moving into the trash: %w", path, err)
	}
	return nil
}

// Restore moves a doomed entry back from the trash to its place, as if the sweep had not chosen it.
func (r *sweepRun) Restore(it *store.SweepItem) {
	if it.Entry.Finished {
		renameNoReplaceAt(r.sw.trashfd, it.Entry.ID, r.storefd, it.Entry.ID)
	} else if r.partfd >= 0 {
		renameNoReplaceAt(r.sw.trashfd, trashName(it.Entry), r.partfd, it.Entry.ID)
	}
}

// Drop removes a doomed entry from the trash. For a finished upload it reads the marker once
// more first, so that the report carries the last use the folder really had.
func (r *sweepRun) Drop(_ context.Context, it *store.SweepItem) error {
	e := &it.Entry
	name := trashName(*e)
	path := r.sw.s.internal(trashDir, name)
	if e.Finished {
		if dirfd, err := openDirAt(r.sw.trashfd, name); err == nil {
			if used, ok, err := lastUsedAt(dirfd, path+"/"+UsedName); err == nil && ok {
				e.LastUsed = used
			}
			unix.Close(dirfd)
		}
	}
	if err := removeAt(r.sw.trashfd, name, r.sw.root); err != nil {
		return fault.Errorf(fault.UploadUnreadable, "%s: removing upload %s: %v (left in the trash)", path, e.ID, err)
	}
	return nil
}

// emptyTrash removes what a crashed sweep left in the trash, and the partials that a finish killed
// after its rename left beside their finished uploads. What cannot be removed stays for the next.
func (sw *sweeper) emptyTrash(root fsID) {
	ents, err := readDirAt(sw.trashfd, sw.s.internal(trashDir))
	if err == nil {
		for _, e := range ents {
			removeAt(sw.trashfd, e.Name(), root)
		}
	}
	sw.s.cleanLeftovers(root)
}

// cleanLeftovers removes partial folders whose id is a finished upload: only an info.json that a
// finish killed after its rename left behind.
func (s *localStore) cleanLeftovers(root fsID) {
	storefd, err := unix.Open(s.Dir, noFollowDir, 0)
	if err != nil {
		return
	}
	defer unix.Close(storefd)
	partfd, err := s.openPartialsNoCreate(storefd)
	if err != nil || partfd < 0 {
		return
	}
	defer unix.Close(partfd)
	ents, err := readDirAt(partfd, s.internal(partialDir))
	if err != nil {
		return
	}
	for _, e := range ents {
		if ValidID(e.Name()) != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstatat(storefd, e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW) == nil && uint32(st.Mode)&unix.S_IFMT == unix.S_IFDIR {
			if _, err := s.ReadMeta(e.Name()); err == nil {
				removeAt(partfd, e.Name(), root)
			}
		}
	}
}
