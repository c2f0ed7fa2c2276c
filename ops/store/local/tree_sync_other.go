//go:build unix && !linux

package local

import "os"

// fileSyncEach: without syncfs, each file of a folder upload is fsynced as it is closed and each
// folder once its files are written; treeCommit then fsyncs out/.
const fileSyncEach = true

// treeCommit makes every write of a folder upload durable, with out/ (open as dir) holding it.
func treeCommit(dir *os.File) error {
	return syncFile(dir)
}

// commitSync ends the commit of a batch whose files were each fsynced (fd is the store folder):
// where fsync leaves the bytes in the drive's cache (macOS), one flush of the drive for the batch.
func commitSync(fd int) error { return driveFlush(fd) }
