package local

import (
	"os"

	"golang.org/x/sys/unix"
)

// fileSyncEach: on Linux the files of a folder upload are not fsynced one by one; treeCommit's
// syncfs makes all of them durable in one call (one journal commit for the whole tree).
const fileSyncEach = false

// treeCommit makes every write of a folder upload durable, with out/ (open as dir) holding it.
func treeCommit(dir *os.File) error {
	return wrap(dir.Name(), unix.Syncfs(int(dir.Fd())))
}

// commitSync makes every write of a batch's uploads durable in one call (fd is the store
// folder): syncfs.
func commitSync(fd int) error { return unix.Syncfs(fd) }

// dirDurable makes the names made or renamed in the folder fd durable: fsync.
func dirDurable(fd int) error { return unix.Fsync(fd) }
