package local

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
	"golang.org/x/sys/unix"
)

// TestLockPartialMovedWhileWaiting: a writer waiting for an unfinished upload's lock while a
// sweep moves its folder into the trash finds it gone (upload.missing) once the lock is free, and
// writes nothing into the folder on its way out.
func TestLockPartialMovedWhileWaiting(t *testing.T) {
	s := testStore(t)
	id, err := s.Begin(context.Background(), "a.bin", -1)
	must(t, err)
	held, err := s.lockPartial(id, false)
	must(t, err)
	var st unix.Stat_t
	must(t, unix.Fstat(int(held.f.Fd()), &st))

	got := make(chan error, 1)
	go func() {
		p, err := s.lockPartial(id, false)
		if err == nil {
			err = fmt.Errorf("locked the partial at %s", p.dir)
			p.close()
		}
		got <- err
	}()
	waitBlockedFlock(t, st.Ino)
	trash := s.internal(trashDir)
	must(t, os.MkdirAll(trash, DirMode))
	must(t, os.Rename(s.partialDir(id), filepath.Join(trash, id)))
	held.close()
	if err := <-got; fault.CodeOf(err) != fault.UploadMissing {
		t.Fatalf("lock of a partial moved into the trash while waiting: %v, want upload.missing", err)
	}
}

// waitBlockedFlock waits until a flock request on the inode ino is blocked, as /proc/locks shows
// one ("->" before its kind): the lock waiting in another goroutine.
func waitBlockedFlock(t *testing.T, ino uint64) {
	t.Helper()
	for {
		f, err := os.Open("/proc/locks")
		must(t, err)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 6 && fields[1] == "->" && fields[2] == "FLOCK" && strings.HasSuffix(fields[6], fmt.Sprintf(":%d", ino)) {
				f.Close()
				return
			}
		}
		f.Close()
		unix.Nanosleep(&unix.Timespec{Nsec: 1e6}, nil)
	}
}
