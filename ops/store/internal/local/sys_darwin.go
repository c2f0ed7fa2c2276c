package local

import (
	"errors"

	"golang.org/x/sys/unix"
)

// renameNoReplaceAt renames from (in the folder fromfd) to to (in tofd); to must not exist.
// renameatx_np(RENAME_EXCL) checks that atomically; where the file system lacks it, the portable
// check-then-rename is used.
func renameNoReplaceAt(fromfd int, from string, tofd int, to string) error {
	err := unix.RenameatxNp(fromfd, from, tofd, to, unix.RENAME_EXCL)
	if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EINVAL) {
		return renameCheckedAt(fromfd, from, tofd, to)
	}
	return err
}

// driveFlush asks the drive to write its cache to the medium (F_FULLFSYNC): once per commit,
// after the plain fsync of each file, instead of a full flush per file.
func driveFlush(fd int) error {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_FULLFSYNC, 0)
	return err
}
