//go:build !unix

package acp

import (
	"errors"
	"os"
)

// openNoFollow opens a cache entry for reading unless its name is a symbolic link (looked at
// first, and the file opened checked to be the one looked at: no O_NOFOLLOW here).
func openNoFollow(path string) (*os.File, error) {
	lfi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !lfi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !os.SameFile(lfi, fi) {
		f.Close()
		return nil, errors.New("replaced while it was opened")
	}
	return f, nil
}
