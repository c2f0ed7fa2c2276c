//go:build unix

package acp

import (
	"errors"
	"os"
	"syscall"
)

// owner is the owner's uid and the hard links of the file fi describes.
func owner(fi os.FileInfo) (uid, links int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Nlink), true
}

// running reports whether process pid exists (signal 0 reaches it, or it is another user's).
func running(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}
