//go:build unix

package local

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/sweep"
)

// TestListUnfinishedFolderSize: an unfinished folder upload is listed with the bytes its tree
// holds so far, summed by the engine over the local listing of each folder: a file in a
// subfolder counts, a link is not followed (its target's bytes do not count) and a folder on
// another file system (a bind mount) is not entered. Its name and begin time come from its info.
func TestListUnfinishedFolderSize(t *testing.T) {
	s := testStore(t)
	id, err := s.Begin(context.Background(), "proj", -1)
	if err != nil {
		t.Fatal(err)
	}
	pdir := s.partialDir(id)
	made := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	info, _ := json.Marshal(partialMeta{Name: "proj", Size: -1, Created: made, Folder: true})
	if err := os.WriteFile(filepath.Join(pdir, partialInfo), info, 0o600); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	big := filepath.Join(outside, "big")
	os.WriteFile(big, []byte(strings.Repeat("x", 1000)), 0o600)
	tree := filepath.Join(pdir, partialTree)
	for _, d := range []string{"sub/deeper", "mnt"} {
		if err := os.MkdirAll(filepath.Join(tree, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(tree, "a"), []byte("abc"), 0o600)
	os.WriteFile(filepath.Join(tree, "sub", "b"), []byte("defg"), 0o600)
	os.WriteFile(filepath.Join(tree, "sub", "deeper", "c"), []byte("hi"), 0o600)
	os.Symlink(big, filepath.Join(tree, "link"))
	os.Symlink(outside, filepath.Join(tree, "sub", "dirlink"))
	if out, err := exec.Command("mount", "--bind", outside, filepath.Join(tree, "mnt")).CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mount --bind: %v: %s", err, out)
		}
		t.Logf("mount --bind: %v: %s (not checked)", err, out)
	} else {
		defer exec.Command("umount", filepath.Join(tree, "mnt")).Run()
	}
	l, err := s.list()
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Entries) != 1 || len(l.Skipped) != 0 {
		t.Fatalf("listed %+v, skipped %+v", l.Entries, l.Skipped)
	}
	e := l.Entries[0]
	if e.ID != id || e.Finished || e.Name != "proj" || e.Size != 9 || !e.Made.Equal(made) || e.Busy {
		t.Fatalf("entry %+v: want proj, unfinished, 9 bytes, made %v", e, made)
	}
}

// TestStatusUnfinishedFolderOffset: the offset Status reports for an unfinished folder upload is
// what it has written so far, the bytes its tree holds, as List gives it and as the S3 store's
// Status does (store.UnfinishedEntry): its data file is only its writer's lock and holds none.
func TestStatusUnfinishedFolderOffset(t *testing.T) {
	s := testStore(t)
	id, err := s.Begin(context.Background(), "proj", -1)
	if err != nil {
		t.Fatal(err)
	}
	pdir := s.partialDir(id)
	info, _ := json.Marshal(partialMeta{Name: "proj", Size: -1, Created: time.Now().UTC(), Folder: true})
	if err := os.WriteFile(filepath.Join(pdir, partialInfo), info, 0o600); err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(pdir, partialTree)
	if err := os.MkdirAll(filepath.Join(tree, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(tree, "a"), []byte("abc"), 0o600)
	os.WriteFile(filepath.Join(tree, "sub", "b"), []byte("defg"), 0o600)
	st, err := s.Status(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.list()
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Entries) != 1 || l.Entries[0].Size != 7 {
		t.Fatalf("listed %+v: want one entry of 7 bytes", l.Entries)
	}
	if st.Finished || st.Name != "proj" || st.Offset != 7 || st.Size != -1 {
		t.Fatalf("status %+v: want proj, unfinished, offset 7 (its tree's bytes), size -1", st)
	}
}

// TestSweepDropsFinishLeftover: the partial a finish killed after its rename leaves beside the
// finished upload of its id is no upload: ls does not show it, and the next sweep removes it as
// it begins (the listing's leftovers), the finished upload kept.
func TestSweepDropsFinishLeftover(t *testing.T) {
	s := testStore(t)
	id := finishLeftover(t, s, "a.txt")
	l, err := s.list()
	must(t, err)
	if len(l.Entries) != 1 || !l.Entries[0].Finished || len(l.Skipped) != 0 {
		t.Fatalf("listed %+v, skipped %+v: want the finished upload alone", l.Entries, l.Skipped)
	}
	b, err := New(s.Dir)
	must(t, err)
	_, err = sweep.Remove(context.Background(), b, nil, 0, false, nil) // a sweep that removes no upload
	must(t, err)
	if _, err := os.Lstat(s.partialDir(id)); !os.IsNotExist(err) {
		t.Fatalf("the finish's leftover is still there: %v", err)
	}
	if _, err := s.ReadMeta(id); err != nil {
		t.Fatal(err)
	}
}

// TestSweepFinishedReplacedSinceListed: a finished upload whose folder was replaced by a link or a
// file after the listing is no upload any more when the sweep re-checks it: Gone, as an
// unfinished one replaced so is, and as S3 and mem report an entry no longer there; nothing is
// removed, neither the link nor what it names, nor the file.
func TestSweepFinishedReplacedSinceListed(t *testing.T) {
	for _, by := range []string{"link", "file"} {
		t.Run(by, func(t *testing.T) {
			s := testStore(t)
			made := time.Now().Add(-48 * time.Hour)
			id := putFinished(t, s, "a.txt", []byte("a"), made)
			l, err := s.list()
			must(t, err)
			if len(l.Entries) != 1 || l.Entries[0].ID != id {
				t.Fatalf("listed %+v", l.Entries)
			}
			moved := filepath.Join(t.TempDir(), "moved")
			must(t, os.Rename(s.UploadDir(id), moved))
			if by == "link" {
				must(t, os.Symlink(moved, s.UploadDir(id)))
			} else {
				must(t, os.WriteFile(s.UploadDir(id), []byte("x"), 0o600))
			}
			sw, err := s.sweep(0, false)
			must(t, err)
			defer sw.Close()
			var got []store.Outcome
			must(t, sw.Remove(context.Background(), l.Entries, func(store.Entry) bool { return true }, func(e store.Entry, o store.Outcome, err error) error {
				if err != nil {
					t.Errorf("%s: %v", e.ID, err)
				}
				got = append(got, o)
				return nil
			}))
			if len(got) != 1 || got[0] != store.Gone {
				t.Fatalf("outcomes %v, want Gone", got)
			}
			if _, err := os.Lstat(s.UploadDir(id)); err != nil {
				t.Fatalf("what replaced the upload was removed: %v", err)
			}
			if _, err := os.Stat(filepath.Join(moved, "a.txt")); err != nil {
				t.Fatalf("the folder the link names was touched: %v", err)
			}
		})
	}
}
