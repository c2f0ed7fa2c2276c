//go:build unix

package local

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// removeAt removes the entry name of the folder open as parent and, when it is a folder,
// everything under it. It works on folder descriptors opened O_NOFOLLOW, so it never follows a
// link, wherever one stands: a link is removed as a link. It never crosses into another file
// system: a folder whose file system (device, and on Linux mount) is not root's is not entered
// and the removal fails, so a bind mount or a mounted disk inside an upload keeps its contents.
// A missing entry is no error.
func removeAt(parent int, name string, root fsID) error {
	err := unix.Unlinkat(parent, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return err
	}
	for try := 0; ; try++ {
		fd, err := unix.Openat(parent, name, noFollowDir, 0)
		if err != nil {
			if errors.Is(err, unix.ENOENT) {
				return nil
			}
			return err
		}
		d := os.NewFile(uintptr(fd), name) // d owns fd from here
		if id, err := fsOf(fd); err != nil || id != root {
			d.Close()
			if err != nil {
				return err
			}
			return fmt.Errorf("%s: another file system is mounted there; not entered", name)
		}
		var first error
		for {
			names, rerr := d.Readdirnames(1024)
			for _, n := range names {
				if err := removeAt(fd, n, root); err != nil && first == nil {
					first = err
				}
			}
			if rerr == io.EOF || len(names) == 0 {
				break
			}
			if rerr != nil {
				if first == nil {
					first = rerr
				}
				break
			}
		}
		d.Close()
		if first != nil {
			return first
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
