//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
)

// smallDisk mounts a tmpfs of size (mount's -o size=) for the test: a disk that fills up. The
// returned grow remounts it with a larger size, as a user who freed space. Root only; CI runs as
// root, so there a test that cannot mount fails.
func smallDisk(t *testing.T, size string) (dir string, grow func(size string)) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("a small tmpfs needs root, and CI runs as root")
		}
		t.Skip("a small tmpfs needs root")
	}
	dir = t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mount tmpfs: %v: %s", err, out)
		}
		t.Skipf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir, func(size string) {
		if out, err := exec.Command("mount", "-o", "remount,size="+size, dir).CombinedOutput(); err != nil {
			t.Fatalf("remount: %v: %s", err, out)
		}
	}
}

// treeBytes is the bytes of the files under dir.
func treeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// lsEntries is `attachctl ls` of store as JSON lines.
func lsEntries(t *testing.T, bin, store string) []map[string]any {
	t.Helper()
	out, err := exec.Command(bin, "ls", "--store", store).Output()
	if err != nil {
		t.Fatalf("ls: %v", err)
	}
	var ents []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var e map[string]any
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("ls line %q: %v", line, err)
		}
		ents = append(ents, e)
	}
	return ents
}

// TestUploadFolderDiskFull: a folder upload into a store whose disk fills up fails whole with
// upload.diskFull, its message naming the file once; nothing appears in the store; ls shows it
// unfinished with the bytes it kept. Once there is room, the same command finishes it under the
// same id, every file its source's bytes, and verify --all passes.
func TestUploadFolderDiskFull(t *testing.T) {
	disk, grow := smallDisk(t, "1m")
	bin := buildAttachctl(t)
	src := filepath.Join(t.TempDir(), "logs")
	const n = 600 // a page each on tmpfs: more than 1 MiB holds
	eachTree(t, src, n, 31)
	st := filepath.Join(disk, "store")

	recs, stderr, code := runUpload(t, bin, "--store", st, src)
	if code != 1 || len(recs) != 1 || recs[0].Error == nil || recs[0].Error.Code != fault.UploadDiskFull {
		t.Fatalf("exit %d, records %+v, stderr %q: want one upload.diskFull record and exit 1", code, recs, stderr)
	}
	var lines []string // the failure's, beside the one line that says the store is new
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if !strings.Contains(l, "made a new store at") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || strings.Count(lines[0], "no space left on device") != 1 || strings.Count(lines[0], disk) != 1 {
		t.Fatalf("stderr %q: want one line naming the file and the cause once", stderr)
	}
	if ents, _ := os.ReadDir(st); len(ents) != 1 || ents[0].Name() != ".attachctl" {
		t.Fatalf("the store holds %v after the failed upload: nothing may appear", ents)
	}
	ls := lsEntries(t, bin, st)
	if len(ls) != 1 {
		t.Fatalf("ls: %v", ls)
	}
	id, _ := ls[0]["id"].(string)
	kept, _ := ls[0]["size"].(float64)
	if fin, _ := ls[0]["finished"].(bool); fin || id == "" || kept <= 0 || kept >= float64(treeBytes(t, src)) {
		t.Fatalf("ls after the failure: %v; want one unfinished upload with the bytes it kept", ls[0])
	}

	grow("16m")
	recs, stderr, code = runUpload(t, bin, "--store", st, src)
	if code != 0 || len(recs) != 1 || recs[0].Upload == nil || recs[0].Upload.ID != id {
		t.Fatalf("after room was made: exit %d, %+v, %q; want upload %s finished", code, recs, stderr, id)
	}
	sameTree(t, src, recs[0].Upload.Path, n)
	if out, err := exec.Command(bin, "verify", "--all", "--store", st).CombinedOutput(); err != nil {
		t.Fatalf("verify --all: %v\n%s", err, out)
	}
	if parts := partialNames(t, st); len(parts) != 0 {
		t.Fatalf("partials left: %v", parts)
	}
}

// TestUploadEachDiskFull: --each into a store whose disk fills up finishes the uploads that fit
// and gives every other file an upload.diskFull record (and its line on standard error), exit 1;
// every finished upload is whole with its metadata, and the metadata names no other. A batch's
// commit writes nothing new (its metadata file is written as its uploads are built), so the next
// batch's builds filling the disk while it commits cost it nothing: the first batch finishes
// however the two interleave. Once there is room, the same command finishes the rest and verify
// --all passes.
func TestUploadEachDiskFull(t *testing.T) {
	disk, grow := smallDisk(t, "3m") // a batch of 512 fits (a page a file), the next does not
	bin := buildAttachctl(t)
	src := filepath.Join(t.TempDir(), "logs")
	const n = 1200
	contents, _ := eachTree(t, src, n, 37)
	st := filepath.Join(disk, "store")

	recs, stderr, code := runUpload(t, bin, "--each", "--store", st, src)
	failed := 0
	for _, r := range recs {
		switch {
		case r.Error != nil && r.Error.Code == fault.UploadDiskFull:
			failed++
		case r.Error != nil || r.Upload == nil:
			t.Fatalf("record %+v: want an upload or upload.diskFull", r)
		}
	}
	if code != 1 || len(recs) != n || failed == 0 || failed == n {
		t.Fatalf("exit %d, %d records, %d upload.diskFull: want exit 1, %d records, some finished", code, len(recs), failed, n)
	}
	if got := strings.Count(stderr, "(upload.diskFull)"); got != failed {
		t.Fatalf("%d upload.diskFull lines on stderr for %d records", got, failed)
	}
	finished := finishedUploads(t, st, contents)
	if finished != n-failed {
		t.Fatalf("%d finished uploads for %d records without error", finished, n-failed)
	}
	for id := range batchMetas(t, st) {
		if _, err := os.Stat(filepath.Join(st, id)); err != nil {
			t.Fatalf("metadata names upload %s, which is not in the store: %v", id, err)
		}
	}

	grow("16m")
	recs, stderr, code = runUpload(t, bin, "--each", "--store", st, src)
	if code != 0 || len(recs) != n {
		t.Fatalf("after room was made: exit %d, %d records, %q", code, len(recs), stderr)
	}
	if got := finishedUploads(t, st, contents); got != n {
		t.Fatalf("%d finished uploads, want %d", got, n)
	}
	if parts := partialNames(t, st); len(parts) != 0 {
		t.Fatalf("partials left: %v", parts)
	}
	if out, err := exec.Command(bin, "verify", "--all", "--store", st).CombinedOutput(); err != nil {
		t.Fatalf("verify --all: %v\n%s", err, out)
	}
}
