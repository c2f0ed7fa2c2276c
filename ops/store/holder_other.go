//go:build !unix

package store

// PIDGone reports whether no process of this host has the pid; where that cannot be asked, a
// holder is taken to be alive (its reservation then ends with ReserveMaxAge).
func PIDGone(pid int) bool { return false }
