package main

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest"
)

// TestSniffOrderUnderJobs: 1,000 files of very different sizes, given in a shuffled order and
// sniffed with --jobs 8, come out in exactly the argument order.
func TestSniffOrderUnderJobs(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(1))
	args := []string{"attachctl", "sniff", "--jobs", "8", "--progress", "never"}
	var paths []string
	for i := 0; i < 1000; i++ {
		p := filepath.Join(dir, fmt.Sprintf("f%04d.txt", i))
		size := rng.Intn(4096)
		if i%97 == 0 {
			size = 2 << 20 // a few big ones, so that later small ones finish first
		}
		if err := os.WriteFile(p, bytes.Repeat([]byte{'a' + byte(i%26)}, size), 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	rng.Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
	var stdout, stderr bytes.Buffer
	if code := runWith(append(args, paths...), strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	r := manifest.NewReader(&stdout)
	for i, want := range paths {
		rec, err := r.Next()
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if rec.Path != want {
			t.Fatalf("record %d is %s, want %s", i, rec.Path, want)
		}
		if rec.Kind != manifest.KindText || len(rec.Blake3) != 64 {
			t.Fatalf("record %d not sniffed: %+v", i, rec)
		}
	}
	if _, err := r.Next(); err == nil {
		t.Fatal("more records than files")
	}
}
