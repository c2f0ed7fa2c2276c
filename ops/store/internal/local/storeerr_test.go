//go:build unix

package local

import (
	"errors"
	"io/fs"
	"syscall"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
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
