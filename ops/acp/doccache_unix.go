//go:build unix

package acp

import (
	"os"
	"syscall"
)

// openNoFollow opens a cache entry for reading unless its name is a symbolic link.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
}
