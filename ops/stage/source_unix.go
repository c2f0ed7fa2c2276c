//go:build unix

package stage

import "syscall"

// oNonblock opens a FIFO without waiting for a writer, so that it is refused, not waited on.
const oNonblock = syscall.O_NONBLOCK
