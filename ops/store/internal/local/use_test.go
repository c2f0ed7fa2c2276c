//go:build unix

package local

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

func TestMarkUsed(t *testing.T) {
	at := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	outside := t.TempDir()
	tests := []struct {
		name string
		prep func(t *testing.T, s *localStore, good string) []string
		code fault.Code
	}{
		{"one finished upload", func(t *testing.T, s *localStore, good string) []string { return []string{good} }, ""},
		{"refresh an existing marker", func(t *testing.T, s *localStore, good string) []string {
			os.WriteFile(filepath.Join(s.UploadDir(good), UsedName), nil, 0o644)
			return []string{good}
		}, ""},
		{"a missing one refuses the call", func(t *testing.T, s *localStore, good string) []string {
			id, _ := store.NewID()
			return []string{good, id}
		}, fault.UploadMissing},
		{"not an id", func(t *testing.T, s *localStore, good string) []string { return []string{good, "../x"} }, fault.UploadInvalid},
		{"folder is a symlink", func(t *testing.T, s *localStore, good string) []string {
			id, _ := store.NewID()
			os.Symlink(outside, s.UploadDir(id))
			return []string{good, id}
		}, fault.UploadUnreadable},
		{"damaged metadata", func(t *testing.T, s *localStore, good string) []string {
			id := putFinished(t, s, "b.txt", []byte("b"), at)
			os.WriteFile(filepath.Join(s.UploadDir(id), MetaName), []byte("{"), FileMode)
			return []string{good, id}
		}, fault.UploadUnreadable},
		{"folder without metadata", func(t *testing.T, s *localStore, good string) []string {
			id, _ := store.NewID()
			os.Mkdir(s.UploadDir(id), DirMode)
			return []string{good, id}
		}, fault.UploadMissing},
		// A marker that is a link is replaced by a marker of the store's own; what it pointed
		// at, or shared its inode with, is not touched (checked below).
		{"marker is a symlink", func(t *testing.T, s *localStore, good string) []string {
			os.Symlink(filepath.Join(outside, "target"), filepath.Join(s.UploadDir(good), UsedName))
			return []string{good}
		}, ""},
		{"marker is a hard link to a file outside", func(t *testing.T, s *localStore, good string) []string {
			os.Link(filepath.Join(outside, "shared"), filepath.Join(s.UploadDir(good), UsedName))
			return []string{good}
		}, ""},
	}
	shared := filepath.Join(outside, "shared")
	if err := os.WriteFile(shared, []byte("not the store's"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	os.Chtimes(shared, old, old)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testStore(t)
			good := putFinished(t, s, "a.txt", []byte("a"), at.Add(-time.Hour))
			ids := tt.prep(t, s, good)
			err := s.MarkUsed(context.Background(), ids, at)
			wantCode(t, err, tt.code)
			last, used, lerr := s.LastUsed(good)
			if tt.code != "" {
				if _, err := os.Stat(filepath.Join(outside, "target")); err == nil {
					t.Fatal("a marker was written through a symlink")
				}
				if used && last.Equal(at) {
					t.Fatalf("a refused call marked %s", good)
				}
				return
			}
			if lerr != nil || !used || !last.Equal(at) {
				t.Fatalf("LastUsed = %v, %v, %v; want %v", last, used, lerr, at)
			}
			fi, _ := os.Lstat(filepath.Join(s.UploadDir(good), UsedName))
			if fi.Mode() != FileMode {
				t.Fatalf("marker mode %v", fi.Mode())
			}
			if _, err := os.Lstat(filepath.Join(outside, "target")); err == nil {
				t.Fatal("a marker was written through a symlink")
			}
			if fi, err := os.Stat(shared); err != nil || fi.Mode().Perm() != 0o644 || !fi.ModTime().Equal(old) {
				t.Fatalf("the file outside that shared the marker's inode changed: %v %v", fi.Mode(), fi.ModTime())
			}
			if b, _ := os.ReadFile(shared); string(b) != "not the store's" {
				t.Fatalf("the file outside changed: %q", b)
			}
		})
	}
}

func TestLastUsedNever(t *testing.T) {
	s := testStore(t)
	id := putFinished(t, s, "a.txt", []byte("a"), time.Now())
	if _, used, err := s.LastUsed(id); used || err != nil {
		t.Fatalf("LastUsed of a fresh upload = %v, %v", used, err)
	}
	missing, _ := store.NewID()
	if _, _, err := s.LastUsed(missing); fault.CodeOf(err) != fault.UploadMissing {
		t.Fatalf("LastUsed of a missing upload: %v", err)
	}
}

func TestLocks(t *testing.T) {
	s := testStore(t)
	a, err := s.lock(lockName, unix.LOCK_SH, 0)
	wantCode(t, err, "")
	b, err := s.lock(lockName, unix.LOCK_SH, 0)
	wantCode(t, err, "")
	_, err = s.lock(lockName, unix.LOCK_EX, 10*time.Millisecond)
	wantCode(t, err, fault.StoreLocked)
	a.Unlock()
	b.Unlock()
	x, err := s.lock(lockName, unix.LOCK_EX, 0)
	wantCode(t, err, "")
	_, err = s.lock(lockName, unix.LOCK_SH, 0)
	wantCode(t, err, fault.StoreLocked)
	x.Unlock()

	sw, err := s.lock(sweepLock, unix.LOCK_EX, 0)
	wantCode(t, err, "")
	_, err = s.lock(sweepLock, unix.LOCK_EX, 20*time.Millisecond)
	wantCode(t, err, fault.StoreLocked)
	sw.Unlock()
	sw, err = s.lock(sweepLock, unix.LOCK_EX, 0)
	wantCode(t, err, "")
	sw.Unlock()
	for _, n := range []string{lockName, sweepLock} {
		fi, err := os.Lstat(s.internal(n))
		if err != nil || fi.Mode() != FileMode {
			t.Fatalf("%s: %v %v", n, fi.Mode(), err)
		}
	}
}

func TestLockRefusesLinks(t *testing.T) {
	s := testStore(t)
	outside := t.TempDir()
	os.RemoveAll(s.internal())
	os.Symlink(outside, s.internal())
	_, err := s.lock(lockName, unix.LOCK_SH, 0)
	wantCode(t, err, fault.UploadUnreadable)
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("a lock file was made through a symlink: %v", ents)
	}
	os.Remove(s.internal())
	os.Mkdir(s.internal(), DirMode)
	os.Symlink(filepath.Join(outside, "lk"), s.internal(lockName))
	_, err = s.lock(lockName, unix.LOCK_SH, 0)
	wantCode(t, err, fault.UploadUnreadable)
	if _, err := os.Lstat(filepath.Join(outside, "lk")); err == nil {
		t.Fatal("the lock followed a symlink")
	}
}
