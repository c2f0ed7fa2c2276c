//go:build unix

package main

import (
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
)

// TestPrepareInterruptedCountsBytesWritten: SIGINT while prepare uploads a large file, after a
// small one is done. The summary counts the bytes prepare wrote, not only those of the files it
// finished: it said "interrupted after 2 files, 120 B" after writing 780 MB.
func TestPrepareInterruptedCountsBytesWritten(t *testing.T) {
	bin := buildAttachctl(t)
	work := t.TempDir()
	small, big := filepath.Join(work, "a.bin"), filepath.Join(work, "b.bin")
	bigFile(t, small, 100, 1)
	bigFile(t, big, 24<<20, 2)
	const pauseAt = 16 << 20
	r := startRunIn(t, bin, nil, pauseAt, "prepare", "--progress", "always", "--jobs", "1",
		"--store", filepath.Join(work, "store"), small, big)
	at := r.waitPaused(t)
	r.cmd.Process.Signal(syscall.SIGINT)
	<-r.done
	stderr := r.stderr.String()
	if code := r.cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d, want 130\n%s", code, stderr)
	}
	m := regexp.MustCompile(`attachctl: prepare: interrupted after \d+ files?, ([0-9.]+) MB in `).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no summary that counts megabytes written (paused at %d bytes):\n%s", at, stderr)
	}
	if mb, _ := strconv.ParseFloat(m[1], 64); mb*1e6 < pauseAt || mb*1e6 > 26e6 {
		t.Fatalf("summary says %s MB written; it paused after %d bytes:\n%s", m[1], at, stderr)
	}
}
