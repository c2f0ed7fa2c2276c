//go:build unix

package local

import (
	"os"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// TestLockFileRules: the rules of store.HoldLockFile on the folder store's flock files. A FIFO
// where a lock file should be is upload.unreadable at once, never waited on; a lock file loosened
// by hand is made 0600 again; an exclusive hold names this process in the file while held and
// leaves the file empty once let go.
func TestLockFileRules(t *testing.T) {
	s := testStore(t)
	p := s.internal(sweepLock)
	must(t, unix.Mkfifo(p, 0o600))
	done := make(chan error, 1)
	go func() { _, err := s.lock(sweepLock, unix.LOCK_EX, time.Second); done <- err }()
	select {
	case err := <-done:
		wantCode(t, err, fault.UploadUnreadable)
	case <-time.After(5 * time.Second):
		t.Fatal("the lock waited on a FIFO")
	}
	must(t, os.Remove(p))

	must(t, os.WriteFile(p, nil, 0o644))
	must(t, os.Chmod(p, 0o644))
	l, err := s.lock(sweepLock, unix.LOCK_EX, 0)
	wantCode(t, err, "")
	if fi, err := os.Lstat(p); err != nil || fi.Mode() != FileMode {
		t.Fatalf("a lock file of mode 0644: %v after the lock (%v); want %v", fi.Mode(), err, FileMode)
	}
	if b, _ := os.ReadFile(p); !holds(string(b)) {
		t.Fatalf("an exclusive hold's file says %q, not this process", b)
	}
	must(t, l.Unlock())
	if b, err := os.ReadFile(p); err != nil || len(b) != 0 {
		t.Fatalf("the file of a hold let go says %q (%v); want it empty", b, err)
	}
}

// holds reports whether a lock file's text names this process.
func holds(text string) bool {
	h, ok := store.ParseHolder(text)
	return ok && h.PID == os.Getpid()
}
