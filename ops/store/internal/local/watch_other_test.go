//go:build unix && !linux

package local

import "testing"

// Without inotify, a test that watches what is written skips that check (watch_linux_test.go).

type writeWatch struct{}

type change struct{ path string }

func (change) wrote() bool { return false }
func (change) made() bool  { return false }

func watchWrites(t *testing.T, roots ...string) *writeWatch { return nil }

func (w *writeWatch) changes(t *testing.T) []change {
	t.Skip("no inotify to see what was written")
	return nil
}
