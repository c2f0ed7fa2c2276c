//go:build unix

package local

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// TestRemoveAtFollowsNoLink checks removeAt, and that os.RemoveAll, which the sweep does not use,
// also leaves link targets alone (both remove a link as a link).
func TestRemoveAtFollowsNoLink(t *testing.T) {
	for _, name := range []string{"removeAt", "os.RemoveAll"} {
		t.Run(name, func(t *testing.T) {
			outside := t.TempDir()
			os.WriteFile(filepath.Join(outside, "target.txt"), []byte("t"), 0o600)
			os.Mkdir(filepath.Join(outside, "dir"), 0o700)
			os.WriteFile(filepath.Join(outside, "dir", "inner.txt"), []byte("i"), 0o600)
			base := t.TempDir()
			doomed := filepath.Join(base, "doomed")
			os.MkdirAll(filepath.Join(doomed, "a", "b"), 0o700)
			os.WriteFile(filepath.Join(doomed, "a", "b", "f"), []byte("f"), 0o600)
			os.Symlink(filepath.Join(outside, "target.txt"), filepath.Join(doomed, "l1"))
			os.Symlink(filepath.Join(outside, "dir"), filepath.Join(doomed, "a", "l2"))
			var err error
			if name == "removeAt" {
				fd, _ := unix.Open(base, unix.O_RDONLY|unix.O_DIRECTORY, 0)
				root, _ := fsOf(fd)
				err = removeAt(fd, "doomed", &root)
				unix.Close(fd)
			} else {
				err = os.RemoveAll(doomed)
			}
			if err != nil || exists(doomed) {
				t.Fatalf("%s: %v, there %v", name, err, exists(doomed))
			}
			for _, p := range []string{"target.txt", "dir/inner.txt"} {
				if !exists(filepath.Join(outside, p)) {
					t.Fatalf("%s removed %s through a link", name, p)
				}
			}
		})
	}
}
