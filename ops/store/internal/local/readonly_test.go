//go:build unix

package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
	"golang.org/x/sys/unix"
)

// finishOne uploads data as name through begin, chunk and finish and returns its metadata.
func finishOne(t *testing.T, s *localStore, name string, data []byte) *Meta {
	t.Helper()
	id, err := s.Begin(context.Background(), name, int64(len(data)))
	must(t, err)
	_, err = s.Chunk(id, 0, bytes.NewReader(data), 0)
	must(t, err)
	m, err := s.Finish(context.Background(), id, -1, "")
	must(t, err)
	return m
}

// TestFinishedReadOnly: a finished upload's bytes and metadata are 0400; the guarded open and
// verify take exactly 0400 and an older store's 0600, and refuse any other mode with one message.
func TestFinishedReadOnly(t *testing.T) {
	s := testStore(t)
	m := finishOne(t, s, "a.txt", []byte("original\n"))
	for _, n := range []string{m.Name, MetaName} {
		fi, err := os.Lstat(filepath.Join(s.UploadDir(m.ID), n))
		must(t, err)
		if fi.Mode().Perm() != ReadOnlyMode {
			t.Errorf("%s: mode %04o, want 0400", n, fi.Mode().Perm())
		}
	}
	path := s.FinishedPath(m.ID, m.Name)
	for _, tc := range []struct {
		mode os.FileMode
		ok   bool
	}{{0o400, true}, {0o600, true}, {0o700, false}, {0o500, false}, {0o200, false}, {0o000, false}, {0o440, false}, {0o644, false}} {
		must(t, os.Chmod(path, tc.mode))
		f, err := s.openUploadFile(m.ID, m.Name)
		if f != nil {
			f.Close()
		}
		_, verr := s.VerifyUpload(m.ID, nil)
		if tc.ok {
			wantCode(t, err, "")
			wantCode(t, verr, "")
			continue
		}
		wantCode(t, err, fault.UploadUnreadable)
		wantCode(t, verr, fault.UploadUnreadable)
		// One message for both; modes giving group or others access are refused for that first.
		why := fmt.Sprintf("mode %04o, not 0400 (or an older store's 0600)", tc.mode)
		if err.Error() != verr.Error() || tc.mode&0o077 == 0 && !strings.Contains(err.Error(), why) {
			t.Errorf("mode %04o: open %q, verify %q: want both to say %q", tc.mode, err, verr, why)
		}
	}
	must(t, os.Chmod(path, ReadOnlyMode))
	// An older store's 0600 metadata still reads.
	must(t, os.Chmod(filepath.Join(s.UploadDir(m.ID), MetaName), FileMode))
	_, err := s.VerifyUpload(m.ID, nil)
	wantCode(t, err, "")
}

// TestFinishedReadOnlyForOwner: `echo >> file` as the owner of the store fails on a finished
// upload (and works on a 0600 file beside it, so it is the mode that stops it). Run as root, whom
// mode bits do not stop, the write runs as another user who owns a copy of the store.
func TestFinishedReadOnlyForOwner(t *testing.T) {
	base := t.TempDir()
	if os.Geteuid() == 0 {
		must(t, os.Chmod(base, 0o711)) // the other user must reach the store
		for p := base; p != "/"; p = filepath.Dir(p) {
			if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o001 == 0 {
				must(t, os.Chmod(p, fi.Mode().Perm()|0o001))
			}
		}
	}
	s, err := openStore(filepath.Join(base, "chat"), true)
	must(t, err)
	m := finishOne(t, s, "a.txt", []byte("original\n"))
	path := s.FinishedPath(m.ID, m.Name)
	control := filepath.Join(s.UploadDir(m.ID), "control")
	must(t, os.WriteFile(control, nil, FileMode))
	echo := func(file string) (string, error) {
		cmd := exec.Command("sh", "-c", `echo changed >> "$1"`, "sh", file)
		if os.Geteuid() == 0 {
			const nobody = 65534
			must(t, filepath.Walk(s.Dir, func(p string, _ os.FileInfo, err error) error {
				must(t, err)
				return os.Lchown(p, nobody, nobody)
			}))
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := echo(path)
	if err == nil || !strings.Contains(strings.ToLower(out), "permission denied") {
		t.Fatalf("echo >> %s as its owner: %v %q, want permission denied", path, err, out)
	}
	if out, err := echo(control); err != nil {
		t.Fatalf("echo >> a 0600 file beside it: %v %q (the check above proves nothing)", err, out)
	}
	b, err := os.ReadFile(path)
	must(t, err)
	if string(b) != "original\n" {
		t.Fatalf("the original changed: %q", b)
	}
	// The agent side's open for writing is refused the same way, as the owner.
	if os.Geteuid() != 0 {
		_, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if !errors.Is(err, unix.EACCES) {
			t.Fatalf("open for writing: %v, want EACCES", err)
		}
	}
}

// TestFinishCrashReadOnly: a finish that made the data read-only and died before its rename is
// undone by the next opener, and the partial can be written and finished again.
func TestFinishCrashReadOnly(t *testing.T) {
	s := testStore(t)
	id, err := s.Begin(context.Background(), "c.txt", -1)
	must(t, err)
	_, err = s.Chunk(id, 0, strings.NewReader("part"), 0)
	must(t, err)
	p, err := s.lockPartial(id, false)
	must(t, err)
	o, err := p.buildOut(4, "")
	must(t, err)
	o.Release() // its files closed, nothing taken apart
	p.close()   // the crash: out/ built, data read-only at out/c.txt, nothing placed
	fi, err := os.Lstat(filepath.Join(s.partialDir(id), partialOut, "c.txt"))
	must(t, err)
	if fi.Mode().Perm() != ReadOnlyMode {
		t.Fatalf("data at out/: mode %04o, want 0400", fi.Mode().Perm())
	}
	_, err = s.Chunk(id, 4, strings.NewReader("+more"), 0)
	must(t, err)
	fi, err = os.Lstat(filepath.Join(s.partialDir(id), partialData))
	must(t, err)
	if fi.Mode().Perm() != FileMode {
		t.Fatalf("data back in the partial: mode %04o, want 0600", fi.Mode().Perm())
	}
	m, err := s.Finish(context.Background(), id, 9, "")
	must(t, err)
	b, err := os.ReadFile(s.FinishedPath(m.ID, m.Name))
	must(t, err)
	if string(b) != "part+more" {
		t.Fatalf("finished %q", b)
	}
}
