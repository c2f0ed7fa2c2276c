package local

import (
	"testing"

	"golang.org/x/sys/unix"
)

// readUmask tells the umask the process has, and leaves it as it is.
func TestReadUmask(t *testing.T) {
	old := unix.Umask(0o022)
	defer unix.Umask(old)
	for _, m := range []int{0, 0o022, 0o077, 0o277, 0o027} {
		unix.Umask(m)
		got, ok := readUmask()
		if !ok || got != uint32(m) {
			t.Fatalf("umask %04o: read %04o (%v)", m, got, ok)
		}
		if now := unix.Umask(m); now != m {
			t.Fatalf("umask %04o: %04o after the read", m, now)
		}
	}
}
