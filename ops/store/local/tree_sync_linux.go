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

// syncBatch makes a batch of built uploads durable in one syncfs, and closes their metadata
// files (as out.sync does where each is fsynced).
func syncBatch(outs []*out) error {
	err := wrap(outs[0].dir.Name(), unix.Syncfs(int(outs[0].dir.Fd())))
	for _, o := range outs {
		o.mf.Close()
	}
	return err
}
