//go:build linux

package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops/store/storetest/s3test"
	"github.com/zeebo/blake3"
)

func treeSum(listing []byte) string {
	h := blake3.Sum256(listing)
	return hex.EncodeToString(h[:])
}

// TestUploadFolderS3KillResume: kill -9 in the middle of a folder upload to S3 (versitygw on
// loopback), at the moment the upload says half its bytes are on the server (the pause hook of
// testhook.go, no polling); nothing is finished in the store (ls, and no listing object); run
// again, the upload resumes under the same id, the objects sent before the kill are kept (the
// server's files untouched), and every object holds its source's bytes (so its BLAKE3).
//
// 3,000 files, as the must-show names for both stores: the count a crash-log bundle or a
// source tree reaches, so the kill lands among sixteen PUTs in flight with thousands to go.
func TestUploadFolderS3KillResume(t *testing.T) {
	srv := s3test.Start(t)
	bin := buildAttachctl(t)
	work := t.TempDir()
	src := filepath.Join(work, "bundle")
	n := 3000
	if testing.Short() {
		n = 300
	}
	var total int64
	for _, f := range writeLogTree(t, src, n, 3, func(i int) string { return fmt.Sprintf("d%02d/f%04d.log", i/100, i) }) {
		total += int64(len(f.Data))
	}
	uri := srv.URI("kill/chat")
	env := append(os.Environ(), srv.Env()...)
	run := func(extra []string, args ...string) *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(env, extra...)
		return cmd
	}
	sniffed, err := run(nil, "sniff", src).Output()
	if err != nil {
		t.Fatalf("sniff: %v", err)
	}
	m := filepath.Join(work, "m.jsonl")
	if err := os.WriteFile(m, sniffed, 0o600); err != nil {
		t.Fatal(err)
	}

	// The first run pauses once half the bytes are on the server, says so, and is killed there.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := run([]string{pauseAtEnv + fmt.Sprint("=", total/2), announceFDEnv + "=3"}, "upload", "--progress", "never", "--store", uri, "--manifest", m)
	cmd.ExtraFiles = []*os.File{pw}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	var at int64
	if _, err := fmt.Fscanf(pr, "paused %d\n", &at); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the upload did not pause (%v); stderr: %s", err, stderr.String())
	}
	pr.Close()
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() {
		t.Fatalf("the upload ended by itself: %v; stderr: %s", cmd.ProcessState, stderr.String())
	}

	// Nothing finished: ls shows one unfinished upload, and its folder holds no listing.
	out, err := run(nil, "ls", "--store", uri).Output()
	if err != nil {
		t.Fatalf("ls: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], `"finished":false`) {
		t.Fatalf("after the kill ls says:\n%s\nwant one unfinished upload", out)
	}
	var ent struct{ ID string }
	if err := json.Unmarshal([]byte(lines[0]), &ent); err != nil || ent.ID == "" {
		t.Fatalf("ls line %s: %v", lines[0], err)
	}
	objects := filepath.Join(srv.Dir, srv.Bucket, "kill", "chat", ent.ID)
	if _, err := os.Lstat(filepath.Join(objects, ".tree.b3")); !os.IsNotExist(err) {
		t.Fatalf("the listing is there before the upload finished: %v", err)
	}
	first := filepath.Join(objects, "bundle", "d00", "f0000.log")
	before, err := os.Stat(first)
	if err != nil {
		t.Fatalf("the first file's object is not on the server after the pause at %d bytes: %v", at, err)
	}

	// The second run resumes and finishes.
	out, err = run(nil, "upload", "--progress", "never", "--store", uri, "--manifest", m).Output()
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	var rec manifest.Record
	if err := json.Unmarshal(bytes.TrimSpace(out), &rec); err != nil || rec.Upload == nil {
		t.Fatalf("resume wrote %s (%v)", out, err)
	}
	if rec.Upload.ID != ent.ID || rec.Files != n {
		t.Fatalf("resumed as %s with %d files; want the unfinished upload %s and %d files", rec.Upload.ID, rec.Files, ent.ID, n)
	}
	after, err := os.Stat(first)
	if err != nil || !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
		t.Fatalf("an object sent before the kill was sent again (or is gone: %v)", err)
	}
	// Every object holds its source's bytes, and the listing's BLAKE3 is the record's.
	sameTree(t, src, filepath.Join(objects, "bundle"), n)
	listing, err := os.ReadFile(filepath.Join(objects, ".tree.b3"))
	if err != nil || strings.Count(string(listing), "\n") != n || treeSum(listing) != rec.Blake3 {
		t.Fatalf("the listing (%d lines, %v) is not the record's tree %s", strings.Count(string(listing), "\n"), err, rec.Blake3)
	}
	out, err = run(nil, "ls", "--store", uri).Output()
	if err != nil || strings.Count(string(out), "\n") != 1 || !strings.Contains(string(out), `"files":`+fmt.Sprint(n)) {
		t.Fatalf("ls after the resume: %v: %s", err, out)
	}
}
