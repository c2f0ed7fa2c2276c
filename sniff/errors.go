package sniff

import (
	"errors"

	"github.com/attachctl/attachctl/manifest/fault"
	unix "github.com/attachctl/attachctl/sniff/internal/fsys"

	"github.com/attachctl/attachctl/manifest"
)

var errShort = errors.New("short read")

// cause is an errno with a plainer message; it keeps the errno for errors.Is (fs.ErrNotExist…).
type cause struct {
	msg string
	err error
}

func (c *cause) Error() string { return c.msg }
func (c *cause) Unwrap() error { return c.err }

// pathError turns an error from stat, open or read of path into a *fault.Error with its code.
func pathError(path string, err error) *fault.Error {
	var errno unix.Errno
	if !errors.As(err, &errno) {
		return fault.Errorf(fault.FileUnreadable, "%s: %w", manifest.Quote(path), err)
	}
	code, msg := fault.FileUnreadable, errno.Error()
	switch errno {
	case unix.ENOENT, unix.ENOTDIR:
		code, msg = fault.FileMissing, "no such file"
	case unix.EACCES, unix.EPERM:
		msg = "permission denied"
	case unix.ELOOP:
		msg = "too many levels of symbolic links (a symlink loop?)"
	case unix.EISDIR:
		msg = "is a directory"
	case unix.ENXIO, unix.EOPNOTSUPP: // open(2) of a socket
		code, msg = fault.FileNotRegular, "is not a regular file; not read"
	}
	return fault.Errorf(code, "%s: %w", manifest.Quote(path), &cause{msg: msg, err: errno})
}

// checkRegular returns nil for a regular file, file.unreadable for a folder, and file.notRegular
// naming what it is for anything else.
func checkRegular(path string, mode uint32) error {
	var what string
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return nil
	case unix.S_IFDIR:
		return fault.Errorf(fault.FileUnreadable, "%s: %w", manifest.Quote(path), &cause{msg: "is a directory", err: unix.EISDIR})
	case unix.S_IFIFO:
		what = "a FIFO"
	case unix.S_IFSOCK:
		what = "a socket"
	case unix.S_IFCHR:
		what = "a character device"
	case unix.S_IFBLK:
		what = "a block device"
	case unix.S_IFLNK:
		what = "a symlink"
	default:
		what = "not a regular file"
	}
	return fault.Errorf(fault.FileNotRegular, "%s: is %s; not read", manifest.Quote(path), what)
}
