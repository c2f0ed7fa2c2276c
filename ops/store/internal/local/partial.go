//go:build unix

package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// Names inside an unfinished upload's folder STORE/.attachctl/partial/<id>/.
const (
	partialData = "data"      // the bytes so far; its size is the offset
	partialInfo = "info.json" // partialMeta
	partialTmp  = "info.json.tmp"
	partialOut  = "out" // the finished folder being built by finish
)

// partialMeta is an unfinished upload's info.json; sourceKey names the source a stage upload copies.
type (
	partialMeta = store.PartialMeta
	sourceKey   = store.PartialSource
)

// partial is an unfinished upload whose data file this process holds flock(LOCK_EX) on. Its
// folder and data were reached from the store folder down, one folder at a time, never through a
// link, and every file in it is written relative to dirf.
type partial struct {
	s    *localStore
	id   string
	dir  string   // its path, for messages
	dirf *os.File // its folder; owns the descriptor
	f    *os.File // data, O_RDWR, locked; owns the descriptor
	meta partialMeta
}

func (s *localStore) partialDir(id string) string { return s.internal(partialDir, id) }

// openFlags for files the store writes: never follow a link, never block on a FIFO.
const openFlags = unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK

// createFd makes the new file name in the folder dirfd, open with flag (O_WRONLY or O_RDWR), with
// mode whatever the umask, and writes b into it from its start: the one way the store makes a
// file. O_EXCL|O_NOFOLLOW: the file is new, made here, so it is a regular file, no open blocks and
// no link is followed; the descriptor O_CREAT returns writes whatever the mode it made. A file it
// could not make whole is removed. The error is the system's.
func createFd(dirfd int, name string, flag int, mode os.FileMode, b []byte) (int, error) {
	fd, err := unix.Openat(dirfd, name, flag|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(mode))
	if err != nil {
		return -1, err
	}
	if err = fixMode(fd, mode); err == nil {
		err = pwriteAll(fd, b, 0)
	}
	if err != nil {
		unix.Close(fd)
		unix.Unlinkat(dirfd, name, 0)
		return -1, err
	}
	return fd, nil
}

// createAt is createFd as a file named path (for messages), its error coded (storeErr).
func createAt(dirfd int, name, path string, flag int, mode os.FileMode, b []byte) (*os.File, error) {
	fd, err := createFd(dirfd, name, flag, mode, b)
	if err != nil {
		return nil, storeErr(path, err)
	}
	return os.NewFile(uintptr(fd), path), nil // owns fd
}

// writeNewAt makes the new file name in the folder dirfd holding b (createFd), with mode, made
// durable when sync is set; a file it could not make durable is removed. The error is the
// system's.
func writeNewAt(dirfd int, name string, b []byte, mode os.FileMode, sync bool) error {
	fd, err := createFd(dirfd, name, unix.O_WRONLY, mode, b)
	if err != nil {
		return err
	}
	if sync {
		err = dirDurable(fd) // fsync, and where that leaves the bytes in the drive's cache a flush
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		unix.Unlinkat(dirfd, name, 0)
	}
	return err
}

// replaceAt puts a new file of mode 0600 holding b at name in the folder dirfd: the one way the
// store writes a file by name. b is written to a file of its own (writeNewAt), named tmp, or where
// writers may race (tmp "") store.TempPrefix(name) and random hex, and renamed over name. A reader finds the
// old file or the new one whole, and what was at name (a link even) is never opened: it only loses
// its name. at, when not zero, becomes the file's times (set without following a link); durable
// fsyncs the file before the rename and the folder after. On failure the new file is removed. The
// error is the system's: the caller names what failed.
func replaceAt(dirfd int, tmp, name string, b []byte, at time.Time, durable bool) error {
	if tmp == "" {
		var rnd [8]byte
		rand.Read(rnd[:])
		tmp = store.TempPrefix(name) + hex.EncodeToString(rnd[:])
	} else {
		unix.Unlinkat(dirfd, tmp, 0) // a leftover of a crash
	}
	if err := writeNewAt(dirfd, tmp, b, FileMode, durable); err != nil {
		return err
	}
	var err error
	if !at.IsZero() {
		ts := unix.NsecToTimespec(at.UnixNano())
		err = unix.UtimesNanoAt(dirfd, tmp, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err == nil {
		err = unix.Renameat(dirfd, tmp, dirfd, name)
	}
	if err != nil {
		unix.Unlinkat(dirfd, tmp, 0)
		return err
	}
	if durable {
		return dirDurable(dirfd)
	}
	return nil
}

// removePartial removes the folder of the unfinished upload id, never following a link or
// leaving the store's file system; durable: and fsyncs the partial folder, so that the removal
// survives a crash (an abort). A leftover that a crash may bring back need not be.
func (s *localStore) removePartial(id string, durable bool) error {
	fd, err := s.openIfThere(InternalDir, partialDir)
	if err != nil || fd < 0 {
		return err
	}
	defer unix.Close(fd)
	if err := removeEntry(fd, id); err != nil {
		return storeErr(s.partialDir(id), err)
	}
	if !durable {
		return nil
	}
	return wrap(s.internal(partialDir), unix.Fsync(fd))
}

// BeginPartial makes a fresh unfinished upload of meta, begun now unless it says when, and
// returns it locked (store.PartialTaker). Its data file is created and locked before info.json is
// written, so a process that finds info.json finds the lock taken. Its name and size were checked
// by the caller (Begin's CheckBegin, the engines' ValidName).
func (s *localStore) BeginPartial(meta partialMeta) (*partial, error) {
	id, release, err := s.quota.AdmitNew(context.Background(), meta.Name, meta.Size) // before anything is made
	if err != nil {
		return nil, err
	}
	if meta.Created.IsZero() {
		meta.Created = time.Now().UTC()
	}
	p, err := s.makePartial(id, meta)
	if err != nil {
		release()
	}
	return p, err
}

// makePartial makes the unfinished upload id of meta and returns it locked.
func (s *localStore) makePartial(id string, meta partialMeta) (*partial, error) {
	partfd, err := s.openDir(lockErr, true, InternalDir, partialDir)
	if err != nil {
		return nil, err
	}
	defer unix.Close(partfd)
	dir := s.partialDir(id)
	fd, err := mkdirFd(partfd, id, dir)
	if err != nil {
		return nil, err
	}
	p := &partial{s: s, id: id, dir: dir, dirf: os.NewFile(uintptr(fd), dir), meta: meta}
	fail := func(err error) (*partial, error) {
		p.close()
		removeEntry(partfd, id)
		return nil, err
	}
	if p.f, err = createAt(fd, partialData, dir+"/"+partialData, unix.O_RDWR, FileMode, nil); err != nil {
		return fail(err)
	}
	if err := unix.Flock(int(p.f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return fail(storeErr(p.f.Name(), err))
	}
	// Not fsynced: a crash may lose a partial just begun (or leave it without a readable
	// info.json, which every reader skips), never damage one that has bytes.
	if err := writeNewAt(fd, partialInfo, p.meta.File(), FileMode, false); err != nil {
		return fail(storeErr(dir+"/"+partialInfo, err))
	}
	return p, nil
}

// ID, Meta, WriteMeta and Close are the partial as store.TakePartial holds it.
func (p *partial) ID() string               { return p.id }
func (p *partial) Meta() *store.PartialMeta { return &p.meta }
func (p *partial) Close()                   { p.close() }

// WriteMeta writes info.json again, durably, from meta.
func (p *partial) WriteMeta() error {
	return wrap(p.dir+"/"+partialInfo, replaceAt(int(p.dirf.Fd()), partialTmp, partialInfo, p.meta.File(), time.Time{}, true))
}

// close releases the lock (closing the descriptor drops the flock) and the folder.
func (p *partial) close() {
	if p.f != nil {
		p.f.Close()
		p.f = nil
	}
	if p.dirf != nil {
		p.dirf.Close()
		p.dirf = nil
	}
}

// remove removes the partial, still locked, and closes it; durable as for removePartial.
func (p *partial) remove(durable bool) error {
	err := p.s.removePartial(p.id, durable)
	p.close()
	return err
}

// size is the offset: the size of data on disk.
func (p *partial) size() (int64, error) {
	fi, err := p.f.Stat()
	if err != nil {
		return 0, storeErr(p.f.Name(), err)
	}
	return fi.Size(), nil
}

// TryLockPartial is lockPartial without waiting (store.PartialTaker).
func (s *localStore) TryLockPartial(id string) (*partial, error) { return s.lockPartial(id, true) }

// lockPartial opens the unfinished upload id and takes flock(LOCK_EX) on its data file, waiting
// for it unless nonblock is set (then an error: its caller takes another partial or makes one).
// Every folder on the way is opened without following a link, and data must be a regular file of
// ours with one link (upload.unreadable otherwise: a link to a file outside the store is never
// written). A finish that crashed after moving data to out/<name> is undone here: out/<name> is
// the same file, locked the same way, and goes back to data. Not there: upload.missing
// (store.NotUnfinished); a file or a link in its folder's place is upload.unreadable.
func (s *localStore) lockPartial(id string, nonblock bool) (*partial, error) {
	for try := 0; try < 10; try++ {
		p, retry, err := s.lockPartialIn(id, nonblock)
		switch {
		case retry:
			continue
		case fault.CodeOf(err) == fault.UploadMissing || errors.Is(err, unix.ENOENT):
			return nil, store.NotUnfinished(id, s.Dir)
		}
		return p, err
	}
	return nil, fault.Errorf(fault.UploadUnreadable, "upload %s: keeps changing under us", id)
}

// lockPartialIn is one try of lockPartial: the one reading of a partial (readPartialAt), its
// file opened for writing and checked by ownPartial before the wait and again after it.
func (s *localStore) lockPartialIn(id string, nonblock bool) (p *partial, retry bool, err error) {
	partfd, err := s.openDir(lockErr, false, InternalDir, partialDir)
	if err != nil {
		return nil, false, err
	}
	defer unix.Close(partfd)
	how := unix.LOCK_EX
	if nonblock {
		how |= unix.LOCK_NB
	}
	r, err := s.readPartialAt(partfd, id, unix.O_RDWR|openFlags, how, ownPartial(id))
	defer func() {
		if p == nil {
			r.close()
		}
	}()
	switch {
	case errors.Is(err, errGone):
		return nil, true, nil
	case err == nil && r.Busy: // held by another writer (nonblock)
		err = unix.EWOULDBLOCK
	}
	if err != nil {
		return nil, false, guardErr(id)(r.path, err) // coded as the guarded open codes one
	}
	// Still the file at that name, and the folder still the partial (a sweep may have moved it
	// into the trash while we waited)?
	at, name := r.dirfd, partialData
	if r.outfd >= 0 {
		at, name = r.outfd, r.Name
	}
	if !still(r.fd, at, name) || !still(r.dirfd, partfd, id) {
		return nil, true, nil
	}
	if r.outfd >= 0 {
		// Ours, and still the crashed finish's out/<name> (a finish holds the lock until its upload
		// is placed): unfinished again, writable, and data again, opened for writing on the next
		// try.
		if err := unix.Fchmod(r.fd, uint32(FileMode)); err != nil {
			return nil, false, storeErr(r.path, err)
		}
		if err := unix.Renameat(r.outfd, r.Name, r.dirfd, partialData); err != nil {
			return nil, false, storeErr(r.path, err)
		}
		return nil, true, nil
	}
	unix.SetNonblock(r.fd, false)
	removeEntry(r.dirfd, partialOut) // what a crashed finish left
	// Read info.json again under the lock: the holder before us may have rewritten it.
	meta, err := readPartialMetaAt(r.dirfd)
	if err != nil {
		return nil, false, fault.Errorf(fault.UploadUnreadable, "upload %s: %s: %v", id, r.dir, err)
	}
	dirf, f := os.NewFile(uintptr(r.dirfd), r.dir), os.NewFile(uintptr(r.fd), r.dir+"/"+partialData) // they own the descriptors
	return &partial{s: s, id: id, dir: r.dir, dirf: dirf, f: f, meta: *meta}, false, nil
}

// ownPartial is the check of a partial read for its writer and for Status (readPartialAt): its
// info.json read (not there: upload.missing), its file there and still linked (errGone when it
// has no link left: finished, aborted or swept meanwhile), and a regular file of ours with one
// link, as the guarded open checks one; before the wait too, so that a file planted by another
// user makes no one wait.
func ownPartial(id string) func(*partialRead) error {
	return func(r *partialRead) error {
		switch {
		case r.merr != nil: // no info.json (ENOENT) is upload.missing (lockPartial, Status)
			return fault.Errorf(fault.UploadUnreadable, "upload %s: %s: %w", id, r.dir, r.merr)
		case r.fd < 0:
			return unix.ENOENT
		case r.st.Nlink == 0:
			return errGone
		}
		return checkOwnFile(&r.st, r.path, id)
	}
}

// errGone: the file a partial's writer locks has no link left (ownPartial).
var errGone = errors.New("no link left")

// partialRead is one reading of an unfinished upload (readPartialAt): its state for the
// listing's rules; its folder (dirfd, at dir); its info.json (meta, nil when unreadable: merr,
// and the listing and the sweep read the partial all the same); the file its writer locks (fd, -1
// when it has none; at path, which is the folder's until that is open, so that an error opening
// it names it; outfd is out/ while that file is out/<name>, else -1) and that file's stat (st,
// Nlink 0 when it has none); release, when a reader kept the writer's lock.
type partialRead struct {
	store.UnfinishedState
	dir              string
	dirfd, fd, outfd int
	path             string
	meta             *partialMeta
	merr             error
	st               unix.Stat_t
	release          func()
}

// readPartialAt reads the unfinished upload id of the partial folder partfd, the one
// reading of a partial, for its readers (readPartial) and its writer (lockPartialIn): its
// info.json, and the file its writer locks, opened with flags (data, or out/<name> while a finish
// moves it; never through a link nor blocking), or the folder's time when it has none. check
// judges what was read, the file by its stat before the lock how is taken and again after;
// LOCK_NB: a writer holding it makes the upload busy. The error is the system's, or check's; r is
// closed by its caller.
func (s *localStore) readPartialAt(partfd int, id string, flags, how int, check func(*partialRead) error) (r *partialRead, err error) {
	r = &partialRead{dir: s.partialDir(id), path: s.partialDir(id), dirfd: -1, fd: -1, outfd: -1}
	if r.dirfd, err = openDirAt(partfd, id); err != nil {
		return r, err
	}
	if r.meta, r.merr = readPartialMetaAt(r.dirfd); r.merr == nil {
		r.Name, r.Made, r.Batch = r.meta.Name, r.meta.Created, r.meta.Batch
	}
	r.fd, err = unix.Openat(r.dirfd, partialData, flags, 0)
	r.path = r.dir + "/" + partialData
	if errors.Is(err, unix.ENOENT) && r.Name != "" {
		// Between a finish's two renames (a finish that crashed, or runs now) the file is
		// out/<name>, opened for reading only: the finish made it read-only, and whoever undoes the
		// finish writes it as data.
		if outfd, oerr := openDirAt(r.dirfd, partialOut); oerr == nil {
			r.outfd, r.path = outfd, r.dir+"/"+partialOut+"/"+r.Name
			r.fd, err = unix.Openat(outfd, r.Name, flags&^unix.O_ACCMODE|unix.O_RDONLY, 0)
		}
	}
	if errors.Is(err, unix.ENOENT) { // no data: a partial just begun, or what a crash left
		var st unix.Stat_t
		if err = unix.Fstat(r.dirfd, &st); err == nil {
			r.Written = timespec(st.Mtim)
			err = check(r)
		}
		return r, err
	}
	stat := func() error {
		if err := unix.Fstat(r.fd, &r.st); err != nil {
			return err
		}
		r.Bytes, r.Written = r.st.Size, timespec(r.st.Mtim)
		return check(r)
	}
	if err == nil {
		err = stat()
	}
	if err != nil {
		return r, err
	}
	if err := flock(r.fd, how); err == unix.EWOULDBLOCK {
		r.Busy = true
	} else if err != nil {
		return r, err
	}
	return r, stat()
}

// close closes what r holds open, and so drops a lock taken.
func (r *partialRead) close() {
	for _, fd := range []*int{&r.fd, &r.outfd, &r.dirfd} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

// readPartialMetaAt reads info.json of the unfinished upload open as dirfd.
func readPartialMetaAt(dirfd int) (*partialMeta, error) {
	b, err := readFileAt(dirfd, partialInfo, partialInfo, 1<<20, regular)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", partialInfo, err)
	}
	m, err := store.ParsePartialMeta(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", partialInfo, err)
	}
	return m, nil
}

// still reports whether name in the folder at is still the file or folder open as fd, a link not
// followed.
func still(fd, at int, name string) bool {
	var a, b unix.Stat_t
	return unix.Fstat(fd, &a) == nil && unix.Fstatat(at, name, &b, unix.AT_SYMLINK_NOFOLLOW) == nil && a.Ino == b.Ino && a.Dev == b.Dev
}

// PartialIDs and PartialOf are store.PartialLister's: the partials folder, and each partial's
// info.json, read through guarded opens.
func (s *localStore) PartialIDs() ([]string, error) { return s.idsIn(InternalDir, partialDir) }

func (s *localStore) PartialOf(id string) (store.PartialOf, bool, error) {
	fd, err := s.openDir(lockErr, false, InternalDir, partialDir, id)
	if err != nil {
		return store.PartialOf{}, false, err
	}
	defer unix.Close(fd)
	m, err := readPartialMetaAt(fd)
	if err != nil {
		return store.PartialOf{}, false, err
	}
	return m.Of(), m.Batch, nil
}

// truncate cuts data back to n bytes (best effort when undoing a refused write) and syncs it.
func (p *partial) truncate(n int64) error {
	if err := p.f.Truncate(n); err != nil {
		return storeErr(p.f.Name(), err)
	}
	return wrap(p.f.Name(), fdatasync(int(p.f.Fd())))
}
