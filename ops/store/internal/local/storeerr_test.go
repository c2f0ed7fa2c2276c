//go:build unix

package local

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"golang.org/x/sys/unix"
)

// TestLockErrLink: a link where the store's internal folder should be is upload.unreadable for
// the lock and keeps its cause (store.FolderErr), so that a caller (and a reader of the message)
// can tell a link (ELOOP) from a file where a folder should be (ENOTDIR).
func TestLockErrLink(t *testing.T) {
	s := newStore(t)
	idir := s.internal()
	if err := os.Rename(idir, idir+".real"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(idir+".real", idir); err != nil {
		t.Fatal(err)
	}
	_, err := s.lock(lockName, unix.LOCK_SH, time.Second)
	if fault.CodeOf(err) != fault.UploadUnreadable || !errors.Is(err, syscall.ELOOP) && !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("lock through a linked internal folder: %v; want upload.unreadable whose cause is the system's (ELOOP, or ENOTDIR where O_DIRECTORY is asked first)", err)
	}
}

// TestPartialInPlace: a file or a link where an unfinished upload's folder should be is
// upload.unreadable for its writer, as a link where a finished upload's folder should be is for
// the guarded open, and the message names that folder (it named no path at all).
func TestPartialInPlace(t *testing.T) {
	for _, link := range []bool{false, true} {
		s := newStore(t)
		id, err := s.Begin(context.Background(), "a.txt", 5)
		must(t, err)
		dir := s.partialDir(id)
		must(t, os.RemoveAll(dir))
		if link {
			must(t, os.Symlink(t.TempDir(), dir))
		} else {
			must(t, os.WriteFile(dir, []byte("x"), 0o600))
		}
		_, err = s.Write(context.Background(), id, 0, strings.NewReader("hello"))
		if fault.CodeOf(err) != fault.UploadUnreadable || !strings.Contains(err.Error(), "upload "+id+": "+dir+": ") {
			t.Errorf("link %v: %v; want upload.unreadable naming %s", link, err, dir)
		}
	}
}
