//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/attachctl/attachctl/ops"
	"github.com/zeebo/blake3"
)

// TestVerifyCheckInterrupted: SIGINT while verify --check hashes the first file of a listing
// (paused there by the tests' hook) stops it between files, as SIGINT stops verify --all: the
// file being read is answered, no further file is opened, every line not reached is answered
// FAILED with upload.interrupted, standard error says once how many were not checked, and the
// exit is 130. Before, the check ran on to the end of the listing and exited 0.
func TestVerifyCheckInterrupted(t *testing.T) {
	bin := buildAttachctl(t)
	dir := t.TempDir()
	const n = 20
	var listing strings.Builder
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("f%02d.txt", i))
		data := []byte(strings.Repeat(p, 100))
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		sum := blake3.Sum256(data)
		listing.WriteString(ops.B3sumLine(fmt.Sprintf("%x", sum), p))
	}
	sums := filepath.Join(dir, "sums.b3")
	if err := os.WriteFile(sums, []byte(listing.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startRunIn(t, bin, nil, 1, "--jobs", "1", "verify", "--check", sums)
	r.waitPaused(t)
	r.cmd.Process.Signal(syscall.SIGINT)
	<-r.done
	if code := r.cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d, want 130\n%s", code, r.stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout.String(), "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("%d lines answered, want every one of %d:\n%s", len(lines), n, r.stdout.String())
	}
	if want := filepath.Join(dir, "f00.txt") + ": OK"; lines[0] != want {
		t.Errorf("the file being read when the signal came: %q, want %q", lines[0], want)
	}
	for i, l := range lines[1:] {
		if want := filepath.Join(dir, fmt.Sprintf("f%02d.txt", i+1)) + ": FAILED (not checked: interrupted before it; run the same command again (upload.interrupted))"; l != want {
			t.Errorf("line %d: %q, want %q", i+2, l, want)
		}
	}
	if want := fmt.Sprintf("attachctl: verify: interrupted: %d lines not checked, each answered FAILED; run the same command again (upload.interrupted)\n", n-1); r.stderr.String() != want {
		t.Errorf("standard error %q, want %q", r.stderr.String(), want)
	}
}
