//go:build unix

package local

import (
	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// writeHolder writes this process into a lock file it has just locked exclusive, so that a
// command that cannot have the lock names who has it.
func writeHolder(fd int) {
	line := store.Me().String() + "\n"
	if unix.Ftruncate(fd, 0) == nil {
		unix.Pwrite(fd, []byte(line), 0)
	}
}

// clearHolder empties a lock file before its exclusive lock is released, so that what a lock
// file names is a process that holds it (or was killed holding it: see readHolder).
func clearHolder(fd int) { unix.Ftruncate(fd, 0) }

// readHolder reads the holder a lock file names, for a process that could not lock it. A holder
// on this host whose pid is gone is not named: it was killed holding the lock, and the lock is
// held now by another (a use, which names none).
func readHolder(fd int) (store.Holder, bool) {
	buf := make([]byte, 512)
	n, err := unix.Pread(fd, buf, 0)
	if err != nil || n <= 0 {
		return store.Holder{}, false
	}
	h, ok := store.ParseHolder(string(buf[:n]))
	if ok && h.Host == store.ThisHost() && store.PIDGone(h.PID) {
		return h, false
	}
	return h, ok
}
