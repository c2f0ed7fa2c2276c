package store

import (
	"io"
	"io/fs"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// OpenLockFile is a lock file of a store kept as files, open for one hold (made when missing):
// its lock and the file's own calls. HoldLockFile is the rest.
type OpenLockFile interface {
	// Try takes the lock without waiting: false when another holds it.
	Try() (bool, error)
	io.ReaderAt
	io.WriterAt
	Truncate(size int64) error
	// Chmod gives the file mode.
	Chmod(mode fs.FileMode) error
	// Close closes the file; closing its only descriptor lets the lock go.
	Close() error
}

// holderFile is an open lock file as TakeLockFile takes it. The holder's line is all the file
// says, read and written in place: a lock file is never renamed over, as its lock is on the file.
type holderFile struct{ OpenLockFile }

// holderMax is the most of a lock file read for its holder's line.
const holderMax = 512

func (f holderFile) Holder() string {
	buf := make([]byte, holderMax)
	n, _ := f.ReadAt(buf, 0) // a short read ends with io.EOF
	return string(buf[:n])
}

func (f holderFile) SetHolder(line string) {
	if f.Truncate(0) == nil && line != "" {
		f.WriteAt([]byte(line), 0)
	}
}

// HeldLock is a lock file held (HoldLockFile) until Unlock.
type HeldLock struct {
	l     OpenLockFile
	named bool // the file names this process as its holder (an exclusive hold)
}

// HoldLockFile takes the lock file l, open at path with the stat st, as TakeLockFile does (the
// lock tag of the store at loc, exclusive or shared, waiting at most wait). The file must be a
// regular file: anything else (a FIFO, a device) is upload.unreadable, never locked. One of the
// current user's of another mode than FileMode is given FileMode (it was made under a umask, or
// loosened by hand); one of another user's is left as it is, not the user's to change. l is
// closed unless held; the error is coded (FolderErr).
func HoldLockFile(l OpenLockFile, st FileStat, exclusive bool, wait time.Duration, loc, tag, path string) (*HeldLock, error) {
	if st.Type != 0 {
		l.Close()
		return nil, fault.Errorf(fault.UploadUnreadable, "store lock %s: not a regular file", path)
	}
	if st.Own && st.Perm != uint32(FileMode) {
		l.Chmod(FileMode) // best effort: the lock is had the same either way
	}
	if err := TakeLockFile(holderFile{l}, exclusive, wait, loc, tag, path); err != nil {
		l.Close()
		return nil, FolderErr(path, err)
	}
	return &HeldLock{l: l, named: exclusive}, nil
}

// Unlock lets the lock go, its file emptied first when it names this process (what a lock file
// names holds it, or was killed holding it). It is safe on a nil HeldLock, and once let go.
func (h *HeldLock) Unlock() error {
	if h == nil || h.l == nil {
		return nil
	}
	if h.named {
		holderFile{h.l}.SetHolder("")
	}
	err := h.l.Close()
	h.l = nil
	return err
}

// OwnFolder is the rule of a folder the store opened, or found made, where it keeps what it
// writes (its internal folders, an unfinished upload's tree), st its stat at path: the folder must
// be the current user's, and have no group or other access, as another's folder there, or one
// another can enter, could be read or changed by them. With mend (a folder of the user's files,
// which may come with their own modes) one of another mode is given DirMode with chmod instead.
func OwnFolder(st FileStat, path string, mend bool, chmod func(fs.FileMode) error) error {
	switch {
	case !st.Own:
		return fault.Errorf(fault.UploadUnreadable, "%s: %s", path, OwnerWhy(st.Uid))
	case mend && st.Perm != uint32(DirMode):
		return FileErr(path, chmod(DirMode))
	case st.Perm&0o077 != 0:
		return fault.Errorf(fault.UploadUnreadable, "%s: %s", path, ModeWhy(DirMode, st.Perm))
	}
	return nil
}
