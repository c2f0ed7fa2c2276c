package sniff

import (
	"fmt"
	"io"
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

// BenchmarkSniffTree is `attachctl sniff --each --no-hash DIR` in one goroutine, for its per-file
// allocations: the walk of a tree of the samples (20 folders of them), Fill of each listed file,
// its record written. ns/op and allocs/op are per file.
func BenchmarkSniffTree(b *testing.B) {
	root := b.TempDir()
	entries, err := os.ReadDir(samples)
	if err != nil {
		b.Fatal(err)
	}
	files := 0
	for i := range 20 {
		dir := filepath.Join(root, fmt.Sprintf("d%02d", i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(samples, e.Name()))
			if err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
				b.Fatal(err)
			}
			files++
		}
	}
	w := manifest.NewWriter(io.Discard)
	opts := Options{NoHash: true, Folders: true}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		err := WalkEntries([]string{root}, WalkOptions{Each: true}, func(e Entry) error {
			rec := &manifest.Record{Path: e.Path, Rel: e.Rel}
			if e.Regular {
				rec.Sniffed = Listed{}
			}
			if err := Fill(rec, opts); err != nil {
				return err
			}
			n++
			return w.Write(rec)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	if n%files != 0 {
		b.Fatalf("%d records for %d files a walk", n, files)
	}
	// Per file, not per walk.
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/file")
}
