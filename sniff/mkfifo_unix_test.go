//go:build unix

package sniff

import "golang.org/x/sys/unix"

// mkfifo makes a FIFO, for the tests that check one is never read.
func mkfifo(path string, mode uint32) error { return unix.Mkfifo(path, mode) }
