//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/zeebo/blake3"
)

// `upload --each` of many small files killed with SIGKILL once most bytes are written (some
// batches committed, the last being built in the staging partial), then run again: every upload
// finished before the kill is whole, nothing half-made is visible, and the second run finishes
// every file (the finished ones named again, not copied twice), drops the dead staging partial
// and leaves a store verify --all passes.
func TestUploadEachKillResume(t *testing.T) {
	bin := buildAttachctl(t)
	work := t.TempDir()
	src := filepath.Join(work, "logs")
	const n = 600 // more than one batch of small uploads
	contents, total := eachTree(t, src, n, 20)
	store := filepath.Join(work, "store")
	r := startUpload(t, bin, total*9/10, "--each", "--store", store, src)
	r.waitPaused(t)
	if _, killed := r.kill(t); !killed {
		t.Fatalf("the upload ended before it was killed: %s", r.stderr.String())
	}
	finished := finishedUploads(t, store, contents)
	t.Logf("%d of %d finished at the kill", finished, n)
	if finished >= n {
		t.Fatalf("all %d finished before the kill", finished)
	}
	if parts := partialNames(t, store); len(parts) != 1 {
		t.Fatalf("partials after the kill: %v, want the staging partial", parts)
	}
	// ls lists the finished uploads, each finished, and not the dead staging partial: it is
	// no upload.
	lsOut, err := exec.Command(bin, "ls", "--store", store).Output()
	if err != nil {
		t.Fatalf("ls after the kill: %v", err)
	}
	if got := bytes.Count(lsOut, []byte(`"finished":true`)); got != finished || bytes.Count(lsOut, []byte("\n")) != finished {
		t.Fatalf("ls after the kill lists %d finished of %d lines, want %d:\n%s", got, bytes.Count(lsOut, []byte("\n")), finished, lsOut)
	}

	again := exec.Command(bin, "upload", "--progress", "never", "--each", "--store", store, src)
	out, err := again.Output()
	if err != nil {
		t.Fatalf("the second run: %v", err)
	}
	recs := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var rec manifest.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil || rec.Upload == nil {
			t.Fatalf("record %q: %v", sc.Text(), err)
		}
		got, err := os.ReadFile(rec.Upload.Path)
		if err != nil || !bytes.Equal(got, contents[rec.Name]) {
			t.Fatalf("%s: upload %s is not its source (%v)", rec.Name, rec.Upload.ID, err)
		}
		recs++
	}
	if recs != n {
		t.Fatalf("%d records, want %d", recs, n)
	}
	if got := finishedUploads(t, store, contents); got != n {
		t.Fatalf("%d finished uploads, want one per file (%d)", got, n)
	}
	if parts := partialNames(t, store); len(parts) != 0 {
		t.Fatalf("partials left: %v", parts)
	}
	if out, err := exec.Command(bin, "verify", "--all", "--store", store).CombinedOutput(); err != nil {
		t.Fatalf("verify --all: %v\n%s", err, out)
	}
}

// finishedUploads counts the finished uploads in store, each checked whole: its one file is the
// source of that name, byte for byte.
func finishedUploads(t *testing.T, store string, contents map[string][]byte) int {
	t.Helper()
	ents, err := os.ReadDir(store)
	if err != nil {
		t.Fatal(err)
	}
	metas := batchMetas(t, store)
	n := 0
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		files, err := os.ReadDir(filepath.Join(store, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, f := range files {
			if f.Name() == ".upload.json" || f.Name() == ".used" {
				continue
			}
			names = append(names, f.Name())
		}
		if len(names) != 1 {
			t.Fatalf("upload %s holds %v", e.Name(), names)
		}
		got, err := os.ReadFile(filepath.Join(store, e.Name(), names[0]))
		if err != nil || !bytes.Equal(got, contents[names[0]]) {
			t.Fatalf("upload %s: %s is not whole (%v)", e.Name(), names[0], err)
		}
		// Its metadata was placed before it was: the commit's file of .attachctl/meta names it,
		// with its name, size and BLAKE3.
		m, ok := metas[e.Name()]
		if !ok {
			t.Fatalf("upload %s without its metadata in %s", e.Name(), filepath.Join(store, ".attachctl", "meta"))
		}
		if sum := blake3.Sum256(got); m.Name != names[0] || m.Size != int64(len(got)) || m.Blake3 != hex.EncodeToString(sum[:]) {
			t.Fatalf("upload %s: metadata %+v, not its file's", e.Name(), m)
		}
		n++
	}
	return n
}

// batchMetas reads the metadata files of small uploads (STORE/.attachctl/meta/*, a line of JSON
// an upload) by upload id; an id named twice fails the test.
func batchMetas(t *testing.T, dir string) map[string]store.Info {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, ".attachctl", "meta", "*"))
	metas := map[string]store.Info{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
			var m store.Info
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("%s: %q: %v", f, line, err)
			}
			if _, twice := metas[m.ID]; twice {
				t.Fatalf("%s: upload %s named twice", f, m.ID)
			}
			metas[m.ID] = m
		}
	}
	return metas
}

// partialNames lists STORE/.attachctl/partial.
func partialNames(t *testing.T, store string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(store, ".attachctl", "partial"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
