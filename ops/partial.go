package ops

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"golang.org/x/sys/unix"
)

// Names inside an unfinished upload's folder STORE/.attachctl/partial/<id>/.
const (
	partialData = "data"      // the bytes so far; its size is the offset
	partialInfo = "info.json" // partialMeta
	partialTmp  = "info.json.tmp"
	partialOut  = "out" // the finished folder being built by finish
)

// partialMeta is an unfinished upload's info.json.
type partialMeta struct {
	Name    string     `json:"name"`
	Size    int64      `json:"size"` // declared size, -1 while open
	Created time.Time  `json:"created"`
	Source  *sourceKey `json:"source,omitempty"`
}

// sourceKey names the file a stage upload copies, so a later run of the same command finds it.
type sourceKey struct {
	Path   string `json:"path"`   // absolute
	Blake3 string `json:"blake3"` // the record's, "" when unknown (sniff --no-hash)
	Size   int64  `json:"size"`
}

// partial is an unfinished upload whose data file this process holds flock(LOCK_EX) on.
type partial struct {
	s    *Store
	id   string
	dir  string
	f    *os.File // data, O_RDWR, locked
	meta partialMeta
}

// errBusy: another process (or another open in this one) holds the partial's lock.
var errBusy = errors.New("partial is being written by another process")

func (s *Store) partialDir(id string) string { return s.internal(partialDir, id) }

// openFlags for files the store writes: never follow a link, never block on a FIFO.
const openFlags = unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK

// createFile makes path with O_EXCL|O_NOFOLLOW and mode 0600 whatever the umask.
func createFile(path string, flag int) (*os.File, error) {
	fd, err := unix.Open(path, flag|unix.O_CREAT|unix.O_EXCL|openFlags, uint32(FileMode))
	if err != nil {
		return nil, storeErr(path, err)
	}
	if err := unix.Fchmod(fd, uint32(FileMode)); err != nil {
		unix.Close(fd)
		return nil, storeErr(path, err)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, storeErr(path, err)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// mkdirNew makes one new folder with mode 0700 whatever the umask; it must not exist yet.
func mkdirNew(dir string) error {
	if err := unix.Mkdir(dir, uint32(DirMode)); err != nil {
		return storeErr(dir, err)
	}
	if err := unix.Chmod(dir, uint32(DirMode)); err != nil {
		return storeErr(dir, err)
	}
	return nil
}

// syncDir fsyncs a folder, so the names made or renamed in it are durable.
func syncDir(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return storeErr(dir, err)
	}
	defer unix.Close(fd)
	if err := unix.Fsync(fd); err != nil {
		return storeErr(dir, err)
	}
	return nil
}

// writeFileDurable writes a small file whole: b into path via a temporary and a rename, fsynced.
func writeFileDurable(dir, tmpName, name string, b []byte) error {
	tmp := filepath.Join(dir, tmpName)
	_ = os.Remove(tmp) // a leftover of a crash
	f, err := createFile(tmp, unix.O_WRONLY)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(tmp)
		return storeErr(tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return storeErr(tmp, err)
	}
	f.Close()
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		os.Remove(tmp)
		return storeErr(tmp, err)
	}
	return syncDir(dir)
}

// readPartialMeta reads info.json of an unfinished upload.
func readPartialMeta(dir string) (*partialMeta, error) {
	path := filepath.Join(dir, partialInfo)
	fd, err := unix.Open(path, unix.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil, err
	}
	var m partialMeta
	if err := json.Unmarshal(b, &m); err != nil || ValidName(m.Name) != nil || m.Size < -1 {
		return nil, errors.New(path + ": damaged")
	}
	return &m, nil
}

// newPartial makes a fresh unfinished upload and returns it locked. Its data file is created and
// locked before info.json is written, so a process that finds info.json finds the lock taken.
func (s *Store) newPartial(name string, size int64, src *sourceKey) (*partial, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	if size < -1 {
		return nil, manifest.Errorf(manifest.UploadInvalid, "size %d: not a size (use -1 or leave it out for an open size)", size)
	}
	if err := MkdirAll(s.internal(partialDir)); err != nil {
		return nil, err
	}
	id, err := NewID()
	if err != nil {
		return nil, manifest.Errorf(manifest.UploadUnreadable, "new upload id: %v", err)
	}
	dir := s.partialDir(id)
	if err := mkdirNew(dir); err != nil {
		return nil, err
	}
	f, err := createFile(filepath.Join(dir, partialData), unix.O_RDWR)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		os.RemoveAll(dir)
		return nil, storeErr(f.Name(), err)
	}
	p := &partial{s: s, id: id, dir: dir, f: f,
		meta: partialMeta{Name: name, Size: size, Created: time.Now().UTC(), Source: src}}
	// Not fsynced: a crash may lose a partial just begun (or leave it without a readable
	// info.json, which every reader skips), never damage one that has bytes.
	b, _ := json.Marshal(&p.meta)
	info, err := createFile(filepath.Join(dir, partialInfo), unix.O_WRONLY)
	if err == nil {
		if _, werr := info.Write(append(b, '\n')); werr != nil {
			err = storeErr(info.Name(), werr)
		}
		info.Close()
	}
	if err != nil {
		p.close()
		os.RemoveAll(dir)
		return nil, err
	}
	return p, nil
}

func (p *partial) writeMeta() error {
	b, err := json.Marshal(&p.meta)
	if err != nil {
		return err
	}
	return writeFileDurable(p.dir, partialTmp, partialInfo, append(b, '\n'))
}

// close releases the lock (closing the descriptor drops the flock).
func (p *partial) close() {
	if p.f != nil {
		p.f.Close()
		p.f = nil
	}
}

// size is the offset: the size of data on disk.
func (p *partial) size() (int64, error) {
	fi, err := p.f.Stat()
	if err != nil {
		return 0, storeErr(p.f.Name(), err)
	}
	return fi.Size(), nil
}

// lockPartial opens the unfinished upload id and takes flock(LOCK_EX) on its data file, waiting
// for it unless nonblock is set (then errBusy). A finish that crashed after moving data to
// out/<name> is undone here: out/<name> is the same file, locked the same way, and goes back to
// data. Not there: upload.missing.
func (s *Store) lockPartial(id string, nonblock bool) (*partial, error) {
	dir := s.partialDir(id)
	missing := manifest.Errorf(manifest.UploadMissing, "upload %s: not an unfinished upload in store %s", id, s.Dir)
	for try := 0; try < 10; try++ {
		meta, err := readPartialMeta(dir)
		if err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
				return nil, missing
			}
			return nil, manifest.Errorf(manifest.UploadUnreadable, "upload %s: %v", id, err)
		}
		path, atOut := filepath.Join(dir, partialData), false
		fd, err := unix.Open(path, unix.O_RDWR|openFlags, 0)
		if errors.Is(err, unix.ENOENT) {
			path, atOut = filepath.Join(dir, partialOut, meta.Name), true
			fd, err = unix.Open(path, unix.O_RDWR|openFlags, 0)
		}
		if errors.Is(err, unix.ENOENT) {
			return nil, missing
		}
		if err != nil {
			return nil, manifest.Errorf(manifest.UploadUnreadable, "upload %s: %s: %v", id, path, err)
		}
		how := unix.LOCK_EX
		if nonblock {
			how |= unix.LOCK_NB
		}
		for {
			err = unix.Flock(fd, how)
			if err != unix.EINTR {
				break
			}
		}
		if err != nil {
			unix.Close(fd)
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, errBusy
			}
			return nil, storeErr(path, err)
		}
		var st, lst unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return nil, storeErr(path, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			unix.Close(fd)
			return nil, manifest.Errorf(manifest.UploadUnreadable, "upload %s: %s: not a regular file", id, path)
		}
		if unix.Lstat(path, &lst) != nil || lst.Ino != st.Ino || lst.Dev != st.Dev || st.Nlink == 0 {
			unix.Close(fd) // moved (finished, aborted, swept) while we waited: look again
			continue
		}
		unix.SetNonblock(fd, false)
		f := os.NewFile(uintptr(fd), filepath.Join(dir, partialData))
		if atOut {
			if err := os.Rename(path, f.Name()); err != nil {
				f.Close()
				return nil, storeErr(path, err)
			}
		}
		os.RemoveAll(filepath.Join(dir, partialOut)) // what a crashed finish left
		// Read info.json again under the lock: the holder before us may have rewritten it.
		if meta, err = readPartialMeta(dir); err != nil {
			f.Close()
			return nil, manifest.Errorf(manifest.UploadUnreadable, "upload %s: %v", id, err)
		}
		return &partial{s: s, id: id, dir: dir, f: f, meta: *meta}, nil
	}
	return nil, manifest.Errorf(manifest.UploadUnreadable, "upload %s: keeps changing under us", id)
}

// partialIDs lists the ids of unfinished uploads, in no particular order.
func (s *Store) partialIDs() ([]string, error) {
	d, err := os.Open(s.internal(partialDir))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, storeErr(s.internal(partialDir), err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, storeErr(s.internal(partialDir), err)
	}
	ids := names[:0]
	for _, n := range names {
		if ValidID(n) == nil {
			ids = append(ids, n)
		}
	}
	return ids, nil
}

// truncate cuts data back to n bytes (best effort when undoing a refused write) and syncs it.
func (p *partial) truncate(n int64) error {
	if err := p.f.Truncate(n); err != nil {
		return storeErr(p.f.Name(), err)
	}
	if err := unix.Fdatasync(int(p.f.Fd())); err != nil {
		return storeErr(p.f.Name(), err)
	}
	return nil
}
