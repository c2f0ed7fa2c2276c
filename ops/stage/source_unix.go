//go:build unix

package stage

import "syscall"

// oNonblock opens a FIFO without waiting for a writer, so that it is refused, not waited on.
const oNonblock = syscall.O_NONBLOCK

// oNofollow opens a folder's file without following a symlink put where the walk found a file.
const oNofollow = syscall.O_NOFOLLOW
