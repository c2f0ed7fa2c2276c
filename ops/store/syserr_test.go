package store

import (
	"errors"
	"io/fs"
	"syscall"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
)

// TestFileErr: an error writing the store names its path once and keeps its cause; a full disk
// or quota is upload.diskFull, anything else upload.unreadable; nil stays nil, so a caller codes
// what a step returned without asking first whether it failed.
func TestFileErr(t *testing.T) {
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
			err := FileErr(p, c.err)
			var me *fault.Error
			if !errors.As(err, &me) || me.Code != c.code || me.Message != c.msg {
				t.Fatalf("FileErr = %v (%T); want %s %q", err, err, c.code, c.msg)
			}
			var errno syscall.Errno
			if !errors.As(err, &errno) {
				t.Fatalf("%v: the cause is lost", err)
			}
		})
	}
	if err := FileErr(p, nil); err != nil {
		t.Fatalf("FileErr(nil) = %v (%T); want nil", err, err)
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
			err := GuardErr(id)(p, c.err)
			var me *fault.Error
			if !errors.As(err, &me) || me.Code != c.code || me.Message != c.msg {
				t.Fatalf("GuardErr = %v; want %s %q", err, c.code, c.msg)
			}
			if c.code != fault.UploadMissing && !errors.Is(err, c.err) {
				t.Fatalf("%v: the cause is lost", err)
			}
		})
	}
}

// TestFolderErr: a folder not there is upload.missing; a link where one of the store's folders
// should be is upload.unreadable and keeps its cause, so that a caller (and a reader of the
// message) can tell a link (ELOOP) from a file where a folder should be (ENOTDIR); a full disk
// is upload.diskFull.
func TestFolderErr(t *testing.T) {
	const p = "/s/.attachctl"
	if err := FolderErr(p, syscall.ENOENT); fault.CodeOf(err) != fault.UploadMissing || fault.AsError(err, "").Message != p+": no such folder" {
		t.Errorf("FolderErr(ENOENT) = %v; want upload.missing, %q", err, p+": no such folder")
	}
	for _, cause := range []syscall.Errno{syscall.ELOOP, syscall.ENOTDIR} {
		err := FolderErr(p, cause)
		if fault.CodeOf(err) != fault.UploadUnreadable || !errors.Is(err, cause) {
			t.Errorf("FolderErr(%v) = %v; want upload.unreadable keeping its cause", cause, err)
		}
	}
	if err := FolderErr(p, &fs.PathError{Op: "mkdirat", Path: p, Err: syscall.ENOSPC}); fault.CodeOf(err) != fault.UploadDiskFull {
		t.Errorf("FolderErr(ENOSPC) = %v; want upload.diskFull", err)
	}
}

// TestCodersKeep: FolderErr and GuardErr leave nil as nil, and an error that carries its code
// already (a refusal of the guarded open's check, a store.locked) as it is, code and message, so
// that a caller codes whatever its step returned without asking whether it is coded yet.
func TestCodersKeep(t *testing.T) {
	const id, p = "01a24133-23ec-7e20-8fc7-2024bb767946", "/s/01a24133-23ec-7e20-8fc7-2024bb767946/a.txt"
	coded := fault.Errorf(fault.StoreLocked, "store /s is locked")
	for name, code := range map[string]func(string, error) error{"FolderErr": FolderErr, "GuardErr": GuardErr(id)} {
		if err := code(p, nil); err != nil {
			t.Errorf("%s(nil) = %v (%T); want nil", name, err, err)
		}
		if err := code(p, coded); err != error(coded) {
			t.Errorf("%s(coded) = %v; want it as it is, %v", name, err, coded)
		}
	}
}
