//go:build unix

// Package fsys is the few system calls sniff makes, by their Unix names: on Unix they are
// golang.org/x/sys/unix's; on Windows an equivalent over package os, so that sniff's one read
// pass is written once for every platform.
package fsys

import "golang.org/x/sys/unix"

type (
	Stat_t = unix.Stat_t
	Errno  = unix.Errno
)

const (
	EINTR      = unix.EINTR
	ENOENT     = unix.ENOENT
	ENOTDIR    = unix.ENOTDIR
	EACCES     = unix.EACCES
	EPERM      = unix.EPERM
	ELOOP      = unix.ELOOP
	EISDIR     = unix.EISDIR
	ENXIO      = unix.ENXIO
	EOPNOTSUPP = unix.EOPNOTSUPP

	O_RDONLY   = unix.O_RDONLY
	O_NONBLOCK = unix.O_NONBLOCK
	O_CLOEXEC  = unix.O_CLOEXEC
	O_NOCTTY   = unix.O_NOCTTY
	O_NOFOLLOW = unix.O_NOFOLLOW

	S_IFMT   = unix.S_IFMT
	S_IFREG  = unix.S_IFREG
	S_IFDIR  = unix.S_IFDIR
	S_IFIFO  = unix.S_IFIFO
	S_IFSOCK = unix.S_IFSOCK
	S_IFCHR  = unix.S_IFCHR
	S_IFBLK  = unix.S_IFBLK
	S_IFLNK  = unix.S_IFLNK
)

func Stat(path string, st *Stat_t) error                   { return unix.Stat(path, st) }
func Lstat(path string, st *Stat_t) error                  { return unix.Lstat(path, st) }
func Fstat(fd int, st *Stat_t) error                       { return unix.Fstat(fd, st) }
func Open(path string, mode int, perm uint32) (int, error) { return unix.Open(path, mode, perm) }
func Close(fd int) error                                   { return unix.Close(fd) }
func Read(fd int, b []byte) (int, error)                   { return unix.Read(fd, b) }
func Pread(fd int, b []byte, off int64) (int, error)       { return unix.Pread(fd, b, off) }
