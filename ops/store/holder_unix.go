//go:build unix

package store

import "syscall"

// PIDGone reports whether no process of this host has the pid (one that exists but is not ours
// to signal is there).
func PIDGone(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == syscall.ESRCH }
