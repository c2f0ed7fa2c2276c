package acp

import (
	"os"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
)

// The work folder is checked again just before the output is let out: the links and the context
// block name paths under it, so a folder swapped while resolve ran (for a symlink to elsewhere,
// or another folder) would have the agent open files this run never checked. It must still be
// the very folder the copies went into (same device and inode), a real folder, the user's own and
// writable by no one else; otherwise the prompt is refused (upload.unreadable) and nothing is
// written or marked used.

// workFolder records the work folder the copies go into, as opened (root).
func (res *Resolution) workFolder(root *os.Root, dir string) error {
	fi, err := root.Stat(".")
	if err != nil {
		return fault.Errorf(fault.UploadUnreadable, "work folder %s: %v", manifest.Quote(dir), err)
	}
	res.work = fi
	return nil
}

// recheckWork refuses a work folder that is no longer the one the copies went into.
func (res *Resolution) recheckWork(dir string) error {
	refuse := func(why string) error {
		return fault.Errorf(fault.UploadUnreadable, "work folder %s: %s while the prompt was resolved: nothing is written", manifest.Quote(dir), why)
	}
	fi, err := os.Lstat(dir)
	switch {
	case err != nil:
		return refuse(err.Error())
	case fi.Mode()&os.ModeSymlink != 0:
		return refuse("replaced by a symlink")
	case res.work == nil || !os.SameFile(fi, res.work):
		return refuse("replaced by another folder")
	}
	if why := untrusted(fi, true); why != "" {
		return refuse("now " + why)
	}
	return nil
}
