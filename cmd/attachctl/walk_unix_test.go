//go:build unix

package main

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// mkfifo PATH... makes FIFOs, so that the scripts do not depend on a system mkfifo.
func init() {
	testCommands["mkfifo"] = func() int {
		for _, p := range os.Args[1:] {
			if err := unix.Mkfifo(p, 0o644); err != nil {
				fmt.Fprintln(os.Stderr, "mkfifo:", err)
				return 1
			}
		}
		return 0
	}
}
