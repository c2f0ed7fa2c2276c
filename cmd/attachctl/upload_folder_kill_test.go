//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest"
	storepkg "github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// TestUploadFolderKillResume: kill -9 in the middle of a 3,000-file folder upload, signalled by
// the upload opening a source file half way (inotify, no polling); nothing is visible as finished
// in the store; run again, the upload resumes under the same id, the files written before the
// kill are kept (same inode), and every file is stored equal to its source.
func TestUploadFolderKillResume(t *testing.T) {
	bin := buildAttachctl(t)
	work := t.TempDir()
	src := filepath.Join(work, "bundle")
	const n = 3000
	files := writeLogTree(t, src, n, 19, func(i int) string { return fmt.Sprintf("d%02d/f%04d.log", i/100, i) })
	half := files[n/2].Path
	store := filepath.Join(work, "store")
	sniffed, err := exec.Command(bin, "sniff", src).Output()
	if err != nil {
		t.Fatalf("sniff: %v", err)
	}
	m := filepath.Join(work, "m.jsonl")
	if err := os.WriteFile(m, sniffed, 0o600); err != nil {
		t.Fatal(err)
	}

	// The signal: the upload opens the file half way through the folder (files go in path order).
	ino, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ino)
	if _, err := unix.InotifyAddWatch(ino, half, unix.IN_OPEN); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "upload", "--store", store, "--manifest", m)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	opened := make(chan error, 1)
	go func() {
		buf := make([]byte, 4096)
		_, err := unix.Read(ino, buf)
		opened <- err
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-opened:
		if err != nil {
			t.Fatal(err)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	case err := <-exited:
		t.Fatalf("the upload ended (%v) before it opened %s; stderr: %s", err, half, stderr.String())
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatal("the upload never opened the file half way")
	}

	// Nothing is finished yet; one partial holds the files written before the kill.
	ents, err := os.ReadDir(store)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if storepkg.ValidID(e.Name()) == nil {
			t.Fatalf("%s is in the store before the upload finished", e.Name())
		}
	}
	parts, err := os.ReadDir(filepath.Join(store, storeInternalDir, "partial"))
	if err != nil || len(parts) != 1 {
		t.Fatalf("partials: %v, %v; want one", parts, err)
	}
	id := parts[0].Name()
	first := filepath.Join(store, storeInternalDir, "partial", id, "tree", "bundle", "d00", "f0000.log")
	before, err := os.Stat(first)
	if err != nil {
		t.Fatalf("the first file is not in the partial: %v", err)
	}

	out, err := exec.Command(bin, "upload", "--store", store, "--manifest", m).Output()
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	var rec manifest.Record
	if err := json.Unmarshal(bytes.TrimSpace(out), &rec); err != nil || rec.Upload == nil {
		t.Fatalf("resume wrote %s (%v)", out, err)
	}
	if rec.Upload.ID != id || rec.Files != n {
		t.Fatalf("resumed as %s with %d files; want the partial's id %s and %d files", rec.Upload.ID, rec.Files, id, n)
	}
	after, err := os.Stat(filepath.Join(rec.Upload.Path, "d00", "f0000.log"))
	if err != nil || !os.SameFile(before, after) {
		t.Fatalf("a file written before the kill was written again (or is gone: %v)", err)
	}
	// Every file equal to its source (so its BLAKE3 is), and nothing else there.
	sameTree(t, src, rec.Upload.Path, n)
	vout, err := exec.Command(bin, "verify", "--store", store, "--all").Output()
	if err != nil || !strings.Contains(string(vout), `"ok":true`) {
		t.Fatalf("verify --all: %v: %s", err, vout)
	}
}
