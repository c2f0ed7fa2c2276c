package store

import (
	"io/fs"
	"testing"
)

// TestGuardedWhy: the guarded open takes a regular file of the user's, one link, read-only or an
// older store's 0600, and says what is wrong with anything else.
func TestGuardedWhy(t *testing.T) {
	own := FileStat{Perm: 0o400, Own: true, Links: 1}
	for _, c := range []struct {
		name string
		edit func(st *FileStat)
		want string
	}{
		{"read-only", func(*FileStat) {}, ""},
		{"an older store's 0600", func(st *FileStat) { st.Perm = 0o600 }, ""},
		{"a symlink", func(st *FileStat) { st.Type = fs.ModeSymlink }, "a symlink"},
		{"a FIFO", func(st *FileStat) { st.Type = fs.ModeIrregular }, "not a regular file"},
		{"another user's", func(st *FileStat) { st.Own, st.Uid = false, 7 }, "owned by uid 7, not by the current user"},
		{"hard linked", func(st *FileStat) { st.Links = 2 }, "2 hard links, not 1"},
		{"read by others", func(st *FileStat) { st.Perm = 0o444 }, "mode 0444 gives group or others access"},
		{"writable only", func(st *FileStat) { st.Perm = 0o200 }, "mode 0200, not 0400 (or an older store's 0600)"},
		{"executable", func(st *FileStat) { st.Perm = 0o700 }, "mode 0700, not 0400 (or an older store's 0600)"},
	} {
		st := own
		c.edit(&st)
		if got := GuardedWhy(st); got != c.want {
			t.Errorf("%s: %q; want %q", c.name, got, c.want)
		}
	}
}
