//go:build unix && !linux

package local

import "golang.org/x/sys/unix"

// fsID names the file system a file is on: its device number.
type fsID struct{ dev uint64 }

func fsOf(fd int) (fsID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fsID{}, err
	}
	return fsID{dev: uint64(st.Dev)}, nil
}
