package sniff

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/attachctl/attachctl/manifest"
)

func benchFill(b *testing.B, paths []string, opts Options) {
	var size int64
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			b.Fatal(err)
		}
		size += fi.Size()
	}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range paths {
			rec := manifest.Record{Path: p}
			if err := Fill(&rec, opts); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkFill: one 64 MiB file (hash throughput) and the small samples (per-file overhead).
func BenchmarkFill(b *testing.B) {
	big := filepath.Join(b.TempDir(), "big.bin")
	data := make([]byte, 64<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < len(data); i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			data[i+j] = byte(v >> (8 * j))
		}
	}
	if err := os.WriteFile(big, data, 0o644); err != nil {
		b.Fatal(err)
	}
	entries, err := os.ReadDir(samples)
	if err != nil {
		b.Fatal(err)
	}
	var small []string
	for _, e := range entries {
		small = append(small, filepath.Join(samples, e.Name()))
	}
	b.Run("64MiB", func(b *testing.B) { benchFill(b, []string{big}, Options{}) })
	b.Run("64MiB-nohash", func(b *testing.B) { benchFill(b, []string{big}, Options{NoHash: true}) })
	b.Run("samples", func(b *testing.B) { benchFill(b, small, Options{}) })
	b.Run("samples-nohash", func(b *testing.B) { benchFill(b, small, Options{NoHash: true}) })
}
