//go:build unix

package local

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"

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

// BeginPartial makes a fresh unfinished upload of meta and returns it locked
// (store.PartialTaker, store.BeginPartialWith). Its name and size were checked by the caller
// (Begin's CheckBegin, the engines' ValidName).
func (s *localStore) BeginPartial(meta partialMeta) (*partial, error) {
	return store.BeginPartialWith(s.quota, meta, s.makePartial)
}

// makePartial makes the unfinished upload id of meta and returns it locked. Its data file is
// created and locked before info.json is written, so a process that finds info.json finds the lock
// taken.
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
// for it unless nonblock is set (store.LockPartFolder). Every folder on the way is opened without
// following a link, and data must be a regular file of ours with one link (upload.unreadable
// otherwise: a link to a file outside the store is never written).
func (s *localStore) lockPartial(id string, nonblock bool) (*partial, error) {
	pf, meta, err := store.LockPartFolder(id, s.Dir, s.partialDir(id), !nonblock, func() (store.PartFolder, error) {
		partfd, err := s.openDir(lockErr, false, InternalDir, partialDir)
		if err != nil {
			return nil, err
		}
		return s.openPart(partfd, id, true)
	}, guardErr(id))
	if err != nil {
		return nil, err
	}
	f := pf.(*partFolder)
	unix.SetNonblock(f.fd, false)
	dirf, data := os.NewFile(uintptr(f.dirfd), f.dir), os.NewFile(uintptr(f.fd), f.dir+"/"+partialData) // they own the descriptors
	f.dirfd, f.fd = -1, -1
	f.Close()
	return &partial{s: s, id: id, dir: dirf.Name(), dirf: dirf, f: data, meta: *meta}, nil
}

// partFolder is the folder of an unfinished upload open (store.PartFolder): dirfd, in the partials
// folder partfd (closed with it when ownPart is set); the file its writer locks, fd (-1: none),
// and while that is out/<name>, outfd and name (else outfd -1).
type partFolder struct {
	id, dir, name            string
	partfd, dirfd, fd, outfd int
	ownPart                  bool
}

// openPart opens the folder of the unfinished upload id in the partials folder partfd (-1: there
// is none, so the upload is not there); the opening closes partfd when own is set.
func (s *localStore) openPart(partfd int, id string, own bool) (store.PartFolder, error) {
	if partfd < 0 {
		return nil, unix.ENOENT
	}
	dirfd, err := openDirAt(partfd, id)
	if err != nil {
		if own {
			unix.Close(partfd)
		}
		return nil, err
	}
	return &partFolder{id: id, dir: s.partialDir(id), partfd: partfd, dirfd: dirfd, fd: -1, outfd: -1, ownPart: own}, nil
}

func (f *partFolder) Info() (*partialMeta, error) { return readPartialMetaAt(f.dirfd) }

func (f *partFolder) Open(out string, write bool) (path string, err error) {
	if out == "" {
		flags := unix.O_RDONLY | openFlags
		if write {
			flags = unix.O_RDWR | openFlags
		}
		f.fd, err = unix.Openat(f.dirfd, partialData, flags, 0)
		return f.dir + "/" + partialData, err
	}
	if f.outfd, err = openDirAt(f.dirfd, partialOut); err != nil {
		return "", err
	}
	f.name = out
	f.fd, err = unix.Openat(f.outfd, out, unix.O_RDONLY|openFlags, 0)
	return f.dir + "/" + partialOut + "/" + out, err
}

func (f *partFolder) Stat() (store.FileStat, error) {
	fd := f.fd
	if fd < 0 {
		fd = f.dirfd
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return store.FileStat{}, err
	}
	return statOf("", &st), nil
}

func (f *partFolder) Lock(wait bool) (busy bool, err error) {
	how := unix.LOCK_EX
	if !wait {
		how |= unix.LOCK_NB
	}
	if err = flock(f.fd, how); err == unix.EWOULDBLOCK {
		return true, nil
	}
	return false, err
}

func (f *partFolder) Still() bool {
	at, name := f.dirfd, partialData
	if f.outfd >= 0 {
		at, name = f.outfd, f.name
	}
	return still(f.fd, at, name) && still(f.dirfd, f.partfd, f.id)
}

func (f *partFolder) Unfinish() error {
	path := f.dir + "/" + partialOut + "/" + f.name
	if err := unix.Fchmod(f.fd, uint32(FileMode)); err != nil {
		return storeErr(path, err)
	}
	return wrap(path, unix.Renameat(f.outfd, f.name, f.dirfd, partialData))
}

func (f *partFolder) DropOut() { removeEntry(f.dirfd, partialOut) }

func (f *partFolder) Tree() (int64, time.Time, bool) { return treeBytesAt(f.dirfd) }

func (f *partFolder) Keep() func() {
	fd := f.fd
	f.fd = -1
	return func() { unix.Close(fd) }
}

func (f *partFolder) Close() {
	for _, fd := range []*int{&f.fd, &f.outfd, &f.dirfd} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
	if f.ownPart && f.partfd >= 0 {
		unix.Close(f.partfd)
		f.partfd = -1
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
