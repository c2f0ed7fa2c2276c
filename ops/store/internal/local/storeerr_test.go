//go:build unix

package local

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"golang.org/x/sys/unix"
)

// TestStoreErr: an error writing the store names its path once and keeps its cause; a full disk
// or quota is upload.diskFull, anything else upload.unreadable.
func TestStoreErr(t *testing.T) {
	const p = "/s/.attachctl/partial/x/tree/a.log"
	for _, c := range []struct {
		name string
		err  error
		code fault.Code
		msg  string
	}{
		{"errno", syscall.ENOSPC, fault.UploadDiskFull, p + ": " + syscall.ENOSPC.Error()},
		{"path error of the same path", &fs.PathError{Op: "write", Path: p, Err: syscall.ENOSPC}, fault.UploadDiskFull, p + ": " + syscall.ENOSPC.Error()},
		{"quota", &fs.PathError{Op: "write", Path: p, Err: syscall.EDQUOT}, fault.UploadDiskFull, p + ": no space left for this user: " + syscall.EDQUOT.Error()},
		{"path error of another path", &fs.PathError{Op: "open", Path: "/other", Err: syscall.EACCES}, fault.UploadUnreadable, p + ": open /other: " + syscall.EACCES.Error()},
		{"other errno", syscall.EIO, fault.UploadUnreadable, p + ": " + syscall.EIO.Error()},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := storeErr(p, c.err)
			var me *fault.Error
			if !errors.As(err, &me) || me.Code != c.code || me.Message != c.msg {
				t.Fatalf("storeErr = %v (%T); want %s %q", err, err, c.code, c.msg)
			}
			var errno syscall.Errno
			if !errors.As(err, &errno) {
				t.Fatalf("%v: the cause is lost", err)
			}
		})
	}
}

// TestGuardErr: an error of the guarded open of an upload, or of writing its marker, names the
// upload and the path once and keeps its cause: not there is upload.missing, a full disk or quota
// upload.diskFull (a marker not written for want of space), a link or anything else
// upload.unreadable, the code said once; a cause not named by a message of its own is kept.
func TestGuardErr(t *testing.T) {
	const id, p = "01a24133-23ec-7e20-8fc7-2024bb767946", "/s/01a24133-23ec-7e20-8fc7-2024bb767946/.used"
	for _, c := range []struct {
		name string
		err  error
		code fault.Code
		msg  string
	}{
		{"not there", syscall.ENOENT, fault.UploadMissing, "upload " + id + ": " + p + ": not a finished upload in this store"},
		{"a link", syscall.ELOOP, fault.UploadUnreadable, "upload " + id + ": " + p + ": a symlink or not a real folder: " + syscall.ELOOP.Error()},
		{"full disk", syscall.ENOSPC, fault.UploadDiskFull, "upload " + id + ": " + p + ": " + syscall.ENOSPC.Error()},
		{"quota", syscall.EDQUOT, fault.UploadDiskFull, "upload " + id + ": " + p + ": no space left for this user: " + syscall.EDQUOT.Error()},
		{"other errno", syscall.EIO, fault.UploadUnreadable, "upload " + id + ": " + p + ": " + syscall.EIO.Error()},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := guardErr(id)(p, c.err)
			var me *fault.Error
			if !errors.As(err, &me) || me.Code != c.code || me.Message != c.msg {
				t.Fatalf("guardErr = %v; want %s %q", err, c.code, c.msg)
			}
			if c.code != fault.UploadMissing && !errors.Is(err, c.err) {
				t.Fatalf("%v: the cause is lost", err)
			}
		})
	}
}

// TestLockErrLink: a link where one of the store's internal folders should be is
// upload.unreadable and keeps its cause, so that a caller (and a reader of the message) can tell
// a link (ELOOP) from a file where a folder should be (ENOTDIR).
func TestLockErrLink(t *testing.T) {
	for _, cause := range []syscall.Errno{syscall.ELOOP, syscall.ENOTDIR} {
		err := lockErr("/s/.attachctl", cause)
		if fault.CodeOf(err) != fault.UploadUnreadable || !errors.Is(err, cause) {
			t.Errorf("lockErr(%v) = %v; want upload.unreadable keeping its cause", cause, err)
		}
	}
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

// TestCodersKeep: lockErr and guardErr leave nil as nil, and an error that carries its code
// already (a refusal of the guarded open's check, a store.locked) as it is, code and message, so
// that a caller codes whatever its step returned without asking whether it is coded yet.
func TestCodersKeep(t *testing.T) {
	const id, p = "01a24133-23ec-7e20-8fc7-2024bb767946", "/s/01a24133-23ec-7e20-8fc7-2024bb767946/a.txt"
	coded := fault.Errorf(fault.StoreLocked, "store /s is locked")
	for name, code := range map[string]func(string, error) error{"lockErr": lockErr, "guardErr": guardErr(id)} {
		if err := code(p, nil); err != nil {
			t.Errorf("%s(nil) = %v (%T); want nil", name, err, err)
		}
		if err := code(p, coded); err != error(coded) {
			t.Errorf("%s(coded) = %v; want it as it is, %v", name, err, coded)
		}
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
