//go:build unix

package local

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// removeAt removes the entry name of the folder open as parent and, when it is a folder,
// everything under it. It works on folder descriptors opened O_NOFOLLOW, so it never follows a
// link, wherever one stands: a link is removed as a link. It never crosses into another file
// system: a folder whose file system (device, and on Linux mount) is not root's is not entered
// and the removal fails, so a bind mount or a mounted disk inside an upload keeps its contents.
// A missing entry is no error. root nil is parent's file system, asked only when there is a folder
// to walk.
func removeAt(parent int, name string, root *fsID) error {
	err := unix.Unlinkat(parent, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return err
	}
	if root == nil {
		id, err := fsOf(parent)
		if err != nil {
			return err
		}
		root = &id
	}
	for try := 0; ; try++ {
		fd, err := openDirAt(parent, name)
		if errors.Is(err, unix.ENOENT) {
			return nil
		} else if err != nil {
			return err
		}
		d := os.NewFile(uintptr(fd), name) // d owns fd
		var names []string
		if id, ferr := fsOf(fd); ferr != nil {
			err = ferr
		} else if id != *root {
			err = fmt.Errorf("%s: another file system is mounted there; not entered", name)
		} else {
			names, err = d.Readdirnames(-1)
		}
		for _, n := range names {
			if rerr := removeAt(fd, n, root); rerr != nil && err == nil {
				err = rerr
			}
		}
		d.Close()
		if err != nil {
			return err
		}
		err = unix.Unlinkat(parent, name, unix.AT_REMOVEDIR)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.ENOTEMPTY) || try == 3 {
			return err
		}
	}
}
