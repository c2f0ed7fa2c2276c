//go:build !unix

package acp

import "os"

// owner cannot tell the owner here: the work folder's modes are all that is checked.
func owner(fi os.FileInfo) (uid, links int, ok bool) { return 0, 0, false }

// running reports whether process pid exists.
func running(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
