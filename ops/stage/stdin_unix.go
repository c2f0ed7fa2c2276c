//go:build unix

package stage

import (
	"os/signal"
	"syscall"
)

// backgroundReadsFail makes a read of the terminal from a background process group fail (EIO)
// instead of stopping the whole process (SIGTTIN): a stopped process does not act on SIGTERM, so
// `kill` would not end it.
func backgroundReadsFail() { signal.Ignore(syscall.SIGTTIN) }
