package sweep

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// RemoveAt removes the entry name of the folder open as parent and, when it is a folder,
// everything under it. It works on folder descriptors opened O_NOFOLLOW, so it never follows a
// link, wherever one stands: a link is removed as a link. (os.RemoveAll also leaves link targets
// alone, but it resolves the path it is given, links on the way included, from its start each
// time; this walk never looks a path up from the top.) A missing entry is no error.
func RemoveAt(parent int, name string) error {
	err := unix.Unlinkat(parent, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return err
	}
	for try := 0; ; try++ {
		fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if errors.Is(err, unix.ENOENT) {
				return nil
			}
			return err
		}
		d := os.NewFile(uintptr(fd), name)
		var first error
		for {
			names, rerr := d.Readdirnames(1024)
			for _, n := range names {
				if err := RemoveAt(fd, n); err != nil && first == nil {
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
