// Package fsys is the few system calls sniff makes, by their Unix names: on Unix they are
// golang.org/x/sys/unix's; on Windows an equivalent over package os, so that sniff's one read
// pass is written once for every platform.
package fsys

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
)

// Timespec is a modification time, comparable as on Unix.
type Timespec struct{ Sec, Nsec int64 }

// Stat_t holds what sniff reads of a stat.
type Stat_t struct {
	Mode uint32
	Size int64
	Mtim Timespec
}

type Errno = syscall.Errno

const (
	EINTR      = syscall.EINTR
	ENOENT     = syscall.ENOENT
	ENOTDIR    = syscall.ENOTDIR
	EACCES     = syscall.EACCES
	EPERM      = syscall.EPERM
	ELOOP      = syscall.ELOOP
	EISDIR     = syscall.EISDIR
	ENXIO      = syscall.ENXIO
	EOPNOTSUPP = syscall.EOPNOTSUPP

	O_RDONLY   = syscall.O_RDONLY
	O_NONBLOCK = 0
	O_CLOEXEC  = 0
	O_NOCTTY   = 0
	O_NOFOLLOW = 0 // Windows: the walk's Lstat said the file is not a link

	S_IFMT   = 0xf000
	S_IFIFO  = 0x1000
	S_IFCHR  = 0x2000
	S_IFDIR  = 0x4000
	S_IFBLK  = 0x6000
	S_IFREG  = 0x8000
	S_IFLNK  = 0xa000
	S_IFSOCK = 0xc000
)

// files are the open files, by the numbers Open hands out.
var (
	mu    sync.Mutex
	files = map[int]*os.File{}
	next  = 3
)

func file(fd int) (*os.File, error) {
	mu.Lock()
	defer mu.Unlock()
	f, ok := files[fd]
	if !ok {
		return nil, syscall.EBADF
	}
	return f, nil
}

// errno turns an error of package os into the Errno sniff tells apart.
func errno(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return ENOENT
	case errors.Is(err, fs.ErrPermission):
		return EACCES
	}
	return err
}

func fill(st *Stat_t, fi fs.FileInfo) {
	m := fi.Mode()
	switch {
	case m.IsRegular():
		st.Mode = S_IFREG
	case m.IsDir():
		st.Mode = S_IFDIR
	case m&fs.ModeSymlink != 0:
		st.Mode = S_IFLNK
	case m&fs.ModeNamedPipe != 0:
		st.Mode = S_IFIFO
	case m&fs.ModeSocket != 0:
		st.Mode = S_IFSOCK
	case m&fs.ModeCharDevice != 0:
		st.Mode = S_IFCHR
	default:
		st.Mode = S_IFBLK
	}
	st.Mode |= uint32(m.Perm())
	st.Size = fi.Size()
	t := fi.ModTime()
	st.Mtim = Timespec{t.Unix(), int64(t.Nanosecond())}
}

func Stat(path string, st *Stat_t) error {
	fi, err := os.Stat(path)
	if err != nil {
		return errno(err)
	}
	fill(st, fi)
	return nil
}

func Lstat(path string, st *Stat_t) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return errno(err)
	}
	fill(st, fi)
	return nil
}

func Fstat(fd int, st *Stat_t) error {
	f, err := file(fd)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		return errno(err)
	}
	fill(st, fi)
	return nil
}

func Open(path string, mode int, perm uint32) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return -1, errno(err)
	}
	mu.Lock()
	defer mu.Unlock()
	fd := next
	next++
	files[fd] = f
	return fd, nil
}

func Close(fd int) error {
	mu.Lock()
	f, ok := files[fd]
	delete(files, fd)
	mu.Unlock()
	if !ok {
		return syscall.EBADF
	}
	return f.Close()
}

func Read(fd int, b []byte) (int, error) {
	f, err := file(fd)
	if err != nil {
		return 0, err
	}
	n, err := f.Read(b)
	if err == io.EOF {
		err = nil
	}
	return n, errno(err)
}

func Pread(fd int, b []byte, off int64) (int, error) {
	f, err := file(fd)
	if err != nil {
		return 0, err
	}
	n, err := f.ReadAt(b, off)
	if err == io.EOF {
		err = nil
	}
	return n, errno(err)
}
