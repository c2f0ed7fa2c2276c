package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// logFile is one file writeLogTree made.
type logFile struct {
	Path string
	Data []byte
}

// writeLogTree writes n small log files (200 to 999 bytes of letters, from seed) under root, the
// i-th at root/rel(i): a crash-log bundle for the kill tests.
func writeLogTree(t *testing.T, root string, n int, seed uint64, rel func(i int) string) []logFile {
	t.Helper()
	rng := rand.New(rand.NewPCG(19, seed))
	files := make([]logFile, n)
	made := map[string]bool{}
	for i := range n {
		p := filepath.Join(root, rel(i))
		if d := filepath.Dir(p); !made[d] {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			made[d] = true
		}
		b := make([]byte, 200+rng.IntN(800))
		for j := range b {
			b[j] = byte('a' + rng.IntN(26))
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		files[i] = logFile{p, b}
	}
	return files
}

// sameTree checks that every file under src is under dst with the same bytes (so the same
// BLAKE3), and that src holds n files.
func sameTree(t *testing.T, src, dst string, n int) {
	t.Helper()
	count := 0
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		want, _ := os.ReadFile(p)
		got, err := os.ReadFile(filepath.Join(dst, rel))
		if err != nil || !bytes.Equal(got, want) {
			return fmt.Errorf("%s: the stored copy differs from its source (%v)", rel, err)
		}
		count++
		return nil
	})
	if err != nil || count != n {
		t.Fatalf("%d files compared: %v", count, err)
	}
}

// eachTree writes n small log files under root in six folders (d0/f0000.log, d1/f0001.log, ...),
// for the --each tests: their bytes by base name (the name --each uploads each by) and the total.
func eachTree(t *testing.T, root string, n int, seed uint64) (contents map[string][]byte, total int64) {
	t.Helper()
	contents = map[string][]byte{}
	for _, f := range writeLogTree(t, root, n, seed, func(i int) string { return fmt.Sprintf("d%d/f%04d.log", i%6, i) }) {
		contents[filepath.Base(f.Path)] = f.Data
		total += int64(len(f.Data))
	}
	return contents, total
}
