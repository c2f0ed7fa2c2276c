//go:build unix

package local

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/attachctl/attachctl/ops/store"
)

// TestWrongMode: the store says which of an upload's folder and files has a mode it does not
// give them, and the mode to restore (the folder first, then its files); nothing when every mode
// is right, an older store's 0600 on a finished file included, and nothing for an id that is not
// an upload of the store.
func TestWrongMode(t *testing.T) {
	for _, tc := range []struct {
		name string
		prep func(s *localStore, id string) // what is changed
		path func(s *localStore, id string) string
		mode os.FileMode
	}{
		{"every mode right", func(*localStore, string) {}, nil, 0},
		{"an older store's 0600 on the finished file", func(s *localStore, id string) { os.Chmod(s.FinishedPath(id, "a.txt"), 0o600) }, nil, 0},
		{"the folder opened to others", func(s *localStore, id string) { os.Chmod(s.UploadDir(id), 0o755) },
			func(s *localStore, id string) string { return s.UploadDir(id) }, 0o700},
		{"the file readable by others", func(s *localStore, id string) { os.Chmod(s.FinishedPath(id, "a.txt"), 0o644) },
			func(s *localStore, id string) string { return s.FinishedPath(id, "a.txt") }, 0o400},
		{"the metadata writable by others", func(s *localStore, id string) { os.Chmod(filepath.Join(s.UploadDir(id), MetaName), 0o666) },
			func(s *localStore, id string) string { return filepath.Join(s.UploadDir(id), MetaName) }, 0o400},
		{"the marker made read-only", func(s *localStore, id string) { os.WriteFile(filepath.Join(s.UploadDir(id), UsedName), nil, 0o400) },
			func(s *localStore, id string) string { return filepath.Join(s.UploadDir(id), UsedName) }, 0o600},
		{"the folder wrong and its file too: the folder first", func(s *localStore, id string) {
			os.Chmod(s.FinishedPath(id, "a.txt"), 0o644)
			os.Chmod(s.UploadDir(id), 0o755)
		}, func(s *localStore, id string) string { return s.UploadDir(id) }, 0o700},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testStore(t)
			id := putFinished(t, s, "a.txt", []byte("alpha\n"), time.Now())
			tc.prep(s, id)
			b := s
			moder := store.Backend(b).Features().Moder
			if moder == nil {
				t.Fatal("the local store declares no Moder")
			}
			got, ok := moder.WrongMode(context.Background(), id)
			if tc.path == nil {
				if ok {
					t.Errorf("WrongMode = %+v, want nothing wrong", got)
				}
				return
			}
			if want := (store.ModeRepair{Path: tc.path(s, id), Mode: tc.mode}); !ok || got != want {
				t.Errorf("WrongMode = %+v, %v; want %+v", got, ok, want)
			}
		})
	}
	s := testStore(t)
	for _, id := range []string{"not-an-id", "01935c4e-8a31-7b6c-9e2f-0c1d2e3f4a5b", "../x"} {
		if got, ok := s.WrongMode(context.Background(), id); ok {
			t.Errorf("WrongMode(%q) = %+v, want nothing", id, got)
		}
	}
}

// TestWrongModeClosedFolder: an upload's folder closed even to the user (mode 0000, which no one
// but root can open) is named with the mode to restore: its mode is read before it is opened.
func TestWrongModeClosedFolder(t *testing.T) {
	s := testStore(t)
	id := putFinished(t, s, "a.txt", []byte("alpha\n"), time.Now())
	if err := os.Chmod(s.UploadDir(id), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(s.UploadDir(id), DirMode) })
	got, ok := s.WrongMode(context.Background(), id)
	if want := (store.ModeRepair{Path: s.UploadDir(id), Mode: DirMode}); !ok || got != want {
		t.Fatalf("WrongMode = %+v, %v; want %+v", got, ok, want)
	}
}
