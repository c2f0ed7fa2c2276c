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

// syncBatch is not used where files are fsynced one by one (commit calls out.sync).
func syncBatch(outs []*out) error {
	for _, o := range outs {
		if err := o.sync(); err != nil {
			return err
		}
	}
	return nil
}
