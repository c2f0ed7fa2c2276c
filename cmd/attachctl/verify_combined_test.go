//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestCombinedMarksFromData: verify --format combined marks each file of a folder upload by what
// the tree verify found of it, not by the words of its failure. A file named "a is missing"
// that changed used to mark its intact neighbour "a" missing as well (the message held "a is
// missing"); each file now gets its own mark.
func TestCombinedMarksFromData(t *testing.T) {
	bin := buildAttachctl(t)
	work := t.TempDir()
	src, st := filepath.Join(work, "proj"), filepath.Join(work, "s")
	if err := os.MkdirAll(src, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"a": "alpha\n", "a is missing": "words\n", "b.txt": "bravo\n"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command(bin, "upload", "--store", st, src).CombinedOutput(); err != nil {
		t.Fatalf("upload: %v\n%s", err, out)
	}
	dirs, _ := filepath.Glob(filepath.Join(st, "*", "proj"))
	if len(dirs) != 1 {
		t.Fatalf("the folder upload: %v", dirs)
	}
	changed := filepath.Join(dirs[0], "a is missing")
	os.Chmod(dirs[0], 0o700)
	os.Chmod(changed, 0o600)
	if err := os.WriteFile(changed, []byte("other words\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(changed, 0o400)
	out, err := exec.Command(bin, "verify", "--store", st, "--all", "--format", "combined").Output()
	if code := exitCodeOf(err); code != 1 {
		t.Fatalf("verify: exit %d (%v), want 1", code, err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	sort.Strings(got)
	want := []string{"* " + dirs[0] + "/a is missing", "= " + dirs[0] + "/a", "= " + dirs[0] + "/b.txt"}
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// exitCodeOf is the exit code of a command's error (0 for none, -1 when it did not run).
func exitCodeOf(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}
