//go:build unix && !linux && !darwin

package local

import "golang.org/x/sys/unix"

// renameNoReplaceAt renames from (in the folder fromfd) to to (in tofd); to must not exist.
// Without an atomic no-replace rename, the target is checked first: only the store's own
// processes race for these names, and they take the store's locks for them.
func renameNoReplaceAt(fromfd int, from string, tofd int, to string) error {
	return renameCheckedAt(fromfd, from, tofd, to)
}

// fdatasync makes a file's data durable: fsync where fdatasync is not offered.
func fdatasync(fd int) error { return unix.Fsync(fd) }

// driveFlush does nothing here: fsync has already made each file durable.
func driveFlush(fd int) error { return nil }

// startWriteback does nothing here: there is no sync_file_range; the later fsync writes all.
func startWriteback(fd int, off, n int64) {}
