//go:build unix

package local

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
	"golang.org/x/sys/unix"
)

// finishedUpload makes a finished upload of content named name through begin, chunk and finish.
func finishedUpload(t *testing.T, s *localStore, name string, content []byte) string {
	t.Helper()
	id, err := s.Begin(context.Background(), name, int64(len(content)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Chunk(id, 0, bytes.NewReader(content), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Finish(context.Background(), id, -1, ""); err != nil {
		t.Fatal(err)
	}
	return id
}

func newStore(t *testing.T) *localStore {
	t.Helper()
	s, err := openStore(filepath.Join(t.TempDir(), "store"), true)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestGuardedOpen(t *testing.T) {
	cases := []struct {
		name  string
		root  bool
		spoil func(t *testing.T, s *localStore, id, file string)
		code  fault.Code
	}{
		{"intact", false, func(*testing.T, *localStore, string, string) {}, ""},
		{"file replaced by a symlink", false, func(t *testing.T, s *localStore, id, file string) {
			other := filepath.Join(s.Dir, "other")
			must(t, os.WriteFile(other, []byte("x"), 0o600))
			must(t, os.Remove(file))
			must(t, os.Symlink(other, file))
		}, fault.UploadUnreadable},
		{"upload folder replaced by a symlink", false, func(t *testing.T, s *localStore, id, file string) {
			moved := filepath.Join(s.Dir, "moved")
			must(t, os.Rename(s.UploadDir(id), moved))
			must(t, os.Symlink(moved, s.UploadDir(id)))
		}, fault.UploadUnreadable},
		{"a second hard link", false, func(t *testing.T, s *localStore, id, file string) {
			must(t, os.Link(file, filepath.Join(s.Dir, "link")))
		}, fault.UploadUnreadable},
		{"mode 0644", false, func(t *testing.T, s *localStore, id, file string) {
			must(t, os.Chmod(file, 0o644))
		}, fault.UploadUnreadable},
		{"owned by another user", true, func(t *testing.T, s *localStore, id, file string) {
			must(t, os.Chown(file, 65534, 65534))
		}, fault.UploadUnreadable},
		{"a FIFO in place of the file", false, func(t *testing.T, s *localStore, id, file string) {
			must(t, os.Remove(file))
			must(t, unix.Mkfifo(file, 0o600))
		}, fault.UploadUnreadable},
		{"file missing", false, func(t *testing.T, s *localStore, id, file string) {
			must(t, os.Remove(file))
		}, fault.UploadMissing},
		{"upload missing", false, func(t *testing.T, s *localStore, id, file string) {
			must(t, os.RemoveAll(s.UploadDir(id)))
		}, fault.UploadMissing},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.root && os.Geteuid() != 0 {
				t.Skip("needs root to give the file to another user")
			}
			s := newStore(t)
			id := finishedUpload(t, s, "a.txt", []byte("hello"))
			file := s.FinishedPath(id, "a.txt")
			c.spoil(t, s, id, file)
			f, err := s.openUploadFile(id, "a.txt")
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("openUploadFile: code %q (%v), want %q", got, err, c.code)
			}
			if err == nil {
				b, _ := io.ReadAll(f)
				f.Close()
				if string(b) != "hello" {
					t.Fatalf("read %q", b)
				}
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
