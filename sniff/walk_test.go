package sniff

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest"
)

type yielded struct {
	path string
	code manifest.Code
}

func walkAll(t *testing.T, paths ...string) []yielded {
	t.Helper()
	var got []yielded
	err := Walk(paths, func(p string, err error) error {
		if err != nil && !strings.Contains(err.Error(), p) {
			t.Errorf("error for %s does not name it: %v", p, err)
		}
		got = append(got, yielded{p, manifest.CodeOf(err)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func mustWrite(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(p), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestWalk(t *testing.T) {
	root := t.TempDir()
	d := filepath.Join(root, "d")
	// Created out of order; yielded in lexical order.
	for _, n := range []string{"zeta.txt", "b/2.txt", "Alpha.txt", "b/10.txt", "a.txt", "b/c/deep.txt"} {
		mustWrite(t, filepath.Join(d, n))
	}
	if err := os.MkdirAll(filepath.Join(d, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("a.txt", filepath.Join(d, "link-to-file")))
	must(os.Symlink("..", filepath.Join(d, "b", "up")))     // back to d: not followed, so no loop
	must(mkfifo(filepath.Join(d, "b", "c", "fifo"), 0o644)) // never opened
	must(os.Symlink(d, filepath.Join(root, "dlink")))
	loopA, loopB := filepath.Join(root, "loopA"), filepath.Join(root, "loopB")
	must(os.Symlink(loopB, loopA))
	must(os.Symlink(loopA, loopB))
	single := filepath.Join(root, "single.txt")
	mustWrite(t, single)

	got := walkAll(t, single, d, filepath.Join(root, "missing"), loopA, filepath.Join(root, "dlink"), filepath.Join(d, "empty"))
	j := func(p ...string) string { return filepath.Join(p...) }
	want := []yielded{
		{single, ""},
		{j(d, "Alpha.txt"), ""},
		{j(d, "a.txt"), ""},
		{j(d, "b", "10.txt"), ""},
		{j(d, "b", "2.txt"), ""},
		{j(d, "b", "c", "deep.txt"), ""},
		{j(d, "b", "c", "fifo"), manifest.FileNotRegular},
		{j(d, "b", "up"), manifest.FileNotRegular},
		{j(d, "link-to-file"), manifest.FileNotRegular},
		{j(d, "zeta.txt"), ""},
		{j(root, "missing"), manifest.FileMissing},
		{loopA, manifest.FileUnreadable},
		// the symlink argument is followed; paths below it keep the name given
		{j(root, "dlink", "Alpha.txt"), ""},
		{j(root, "dlink", "a.txt"), ""},
		{j(root, "dlink", "b", "10.txt"), ""},
		{j(root, "dlink", "b", "2.txt"), ""},
		{j(root, "dlink", "b", "c", "deep.txt"), ""},
		{j(root, "dlink", "b", "c", "fifo"), manifest.FileNotRegular},
		{j(root, "dlink", "b", "up"), manifest.FileNotRegular},
		{j(root, "dlink", "link-to-file"), manifest.FileNotRegular},
		{j(root, "dlink", "zeta.txt"), ""},
		// the empty folder yields nothing
	}
	if len(got) != len(want) {
		t.Fatalf("got %d paths, want %d:\n%v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("#%d: got %v, want %v", i, got[i], want[i])
		}
	}
}

func TestWalkStops(t *testing.T) {
	d := t.TempDir()
	for _, n := range []string{"a", "b", "c"} {
		mustWrite(t, filepath.Join(d, n))
	}
	stop := errors.New("stop")
	var seen []string
	err := Walk([]string{d, d}, func(p string, err error) error {
		seen = append(seen, filepath.Base(p))
		if len(seen) == 2 {
			return stop
		}
		return nil
	})
	if err != stop || strings.Join(seen, ",") != "a,b" {
		t.Errorf("Walk returned %v after %v, want stop after a,b", err, seen)
	}
}

func TestWalkUnreadableFolder(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads folders whatever their mode")
	}
	d := t.TempDir()
	locked := filepath.Join(d, "locked")
	mustWrite(t, filepath.Join(locked, "inside"))
	mustWrite(t, filepath.Join(d, "z"))
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(locked, 0o755)
	got := walkAll(t, d)
	want := []yielded{{locked, manifest.FileUnreadable}, {filepath.Join(d, "z"), ""}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("got %v, want %v", got, want)
	}
}
