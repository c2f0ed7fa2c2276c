//go:build unix

package ops

import (
	"os"
	"strings"
	"testing"
	"time"
)

// Uploads shows finished uploads (with their last use) and unfinished ones (with their bytes so far
// and last write), in id order, and an upload it cannot read with its error.
func TestUploads(t *testing.T) {
	s := testStore(t)
	made := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	used := time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	a := putFinished(t, s, "a.txt", []byte("alpha"), made)
	b := putFinished(t, s, "b.png", []byte("bravo!"), made)
	if err := s.MarkUsed([]string{b}, used); err != nil {
		t.Fatal(err)
	}
	c, err := s.Begin("c.bin", 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Chunk(c, 0, strings.NewReader("abc"), 0); err != nil {
		t.Fatal(err)
	}
	d := putFinished(t, s, "d.txt", []byte("delta"), made)
	if err := os.Chmod(s.FinishedPath(d, "d.txt"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(s.UploadDir(d) + "/" + MetaName); err != nil {
		t.Fatal(err)
	}

	got, err := s.Uploads()
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]Listed{}
	for i, l := range got {
		byID[l.ID] = l
		if i > 0 && got[i-1].ID >= l.ID {
			t.Errorf("not in id order: %s after %s", l.ID, got[i-1].ID)
		}
	}
	if len(got) != 4 {
		t.Fatalf("listed %d uploads, want 4: %+v", len(got), got)
	}
	for _, tc := range []struct {
		id, name string
		size     int64
		finished bool
		used     time.Time
		err      bool
	}{
		{a, "a.txt", 5, true, time.Time{}, false},
		{b, "b.png", 6, true, used, false},
		{c, "c.bin", 3, false, time.Time{}, false},
		{d, "", 0, true, time.Time{}, true},
	} {
		l := byID[tc.id]
		if l.Name != tc.name || l.Size != tc.size || l.Finished != tc.finished || (l.Err != nil) != tc.err {
			t.Errorf("%s: %+v, want name %q size %d finished %v err %v", tc.id, l, tc.name, tc.size, tc.finished, tc.err)
		}
		if tc.finished && !tc.err && (!l.Made.Equal(made) || !l.LastUsed.Equal(tc.used) || len(l.Blake3) != 64 || l.Path != s.FinishedPath(tc.id, tc.name)) {
			t.Errorf("%s: made %v, last used %v, blake3 %q, path %q", tc.id, l.Made, l.LastUsed, l.Blake3, l.Path)
		}
		if !tc.finished && (l.Made.IsZero() || l.LastUsed.IsZero() || l.Blake3 != "" || l.Path != s.partialDir(tc.id)+"/data") {
			t.Errorf("%s (unfinished): %+v", tc.id, l)
		}
	}
}
