package local

import (
	"errors"

	"golang.org/x/sys/unix"
)

// renameNoReplaceAt renames from (in the folder fromfd) to to (in tofd); to must not exist.
// renameat2(RENAME_NOREPLACE) checks that atomically; on a file system without it (EINVAL) the
// portable check-then-rename is used.
func renameNoReplaceAt(fromfd int, from string, tofd int, to string) error {
	err := unix.Renameat2(fromfd, from, tofd, to, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		return renameCheckedAt(fromfd, from, tofd, to)
	}
	return err
}

// fdatasync makes a file's data durable (and its size, not its times).
func fdatasync(fd int) error { return unix.Fdatasync(fd) }

// startWriteback asks the kernel to start writing n bytes of fd at off to disk, without waiting
// (n 0: to the end), so the disk works while the caller goes on and a later fsync finds less to do.
func startWriteback(fd int, off, n int64) {
	unix.SyncFileRange(fd, off, n, unix.SYNC_FILE_RANGE_WRITE)
}
