//go:build unix

package local

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// timespec is a stat time as a time.Time in UTC.
func timespec(ts unix.Timespec) time.Time { return time.Unix(ts.Unix()).UTC() }

// renameCheckedAt is the portable no-replace rename: it refuses when to exists, then renames.
// A rename of a folder onto an existing non-empty folder fails anyway (ENOTEMPTY).
func renameCheckedAt(fromfd int, from string, tofd int, to string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(tofd, to, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		return unix.EEXIST
	}
	return unix.Renameat(fromfd, from, tofd, to)
}

// euid is the user the store's files must belong to: this process's, which never changes while
// it runs, so it is asked once rather than in every guarded open.
var euid = uint32(os.Geteuid())
