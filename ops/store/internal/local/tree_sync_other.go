//go:build unix && !linux

package local

import (
	"os"

	"golang.org/x/sys/unix"
)

// fileSyncEach: without syncfs, each file of a folder upload is fsynced as it is closed and each
// folder once its files are written; treeCommit then fsyncs out/.
const fileSyncEach = true

// treeCommit makes every write of a folder upload durable, with out/ (open as dir) holding it:
// each file and folder was fsynced as it was closed; out/ is, and the drive is flushed once
// (macOS: fsync leaves the bytes in the drive's cache).
func treeCommit(dir *os.File) error {
	if err := syncFile(dir); err != nil {
		return err
	}
	return wrap(dir.Name(), driveFlush(int(dir.Fd())))
}

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
