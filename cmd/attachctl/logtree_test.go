package main

import (
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
