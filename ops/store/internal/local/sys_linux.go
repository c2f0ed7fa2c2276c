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

// fsID names the file system a file is on. On Linux a bind mount of a folder of the same file
// system has the same device number, so the mount id tells them apart.
type fsID struct{ dev, mnt uint64 }

func fsOf(fd int) (fsID, error) {
	var stx unix.Statx_t
	err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &stx)
	if err != nil {
		return fsID{}, err
	}
	id := fsID{dev: uint64(unix.Mkdev(stx.Dev_major, stx.Dev_minor))}
	if stx.Mask&unix.STATX_MNT_ID != 0 {
		id.mnt = stx.Mnt_id
	}
	return id, nil
}

// fileSyncEach: on Linux the files of a folder upload are not fsynced one by one; the commit's
// syncfs (commitSync) makes all of them durable in one call (one journal commit for the whole tree).
const fileSyncEach = false

// commitSync makes every write of a batch's uploads durable in one call (fd is the store
// folder): syncfs.
func commitSync(fd int) error { return unix.Syncfs(fd) }

// dirDurable makes the names made or renamed in the folder fd durable: fsync.
func dirDurable(fd int) error { return unix.Fsync(fd) }
