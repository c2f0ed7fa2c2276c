//go:build unix && !linux

package local

import "golang.org/x/sys/unix"

// fileSyncEach: without syncfs, each file of a folder upload is fsynced as it is closed and each
// folder once its files are written; the commit then fsyncs out/ (out.sync).
const fileSyncEach = true

// commitSync ends the commit of a batch whose files were each fsynced (fd is the store folder):
// where fsync leaves the bytes in the drive's cache (macOS), one flush of the drive for the batch.
func commitSync(fd int) error { return driveFlush(fd) }

// dirDurable makes the names made or renamed in the folder fd durable: fsync, and where fsync
// leaves them in the drive's cache (macOS) a flush of the drive, so that a later write (the
// uploads placed after their metadata, a record naming a placed upload) never reaches the medium
// before them.
func dirDurable(fd int) error {
	if err := unix.Fsync(fd); err != nil {
		return err
	}
	return driveFlush(fd)
}

// fsID names the file system a file is on: its device number.
type fsID struct{ dev uint64 }

func fsOf(fd int) (fsID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fsID{}, err
	}
	return fsID{dev: uint64(st.Dev)}, nil
}

// fdatasync makes a file's data durable: fsync, where fdatasync is not offered (macOS offers
// fsync only).
func fdatasync(fd int) error { return unix.Fsync(fd) }

// startWriteback does nothing here: there is no sync_file_range; the later fsync writes all.
func startWriteback(fd int, off, n int64) {}
