package shrink

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/shrink/internal/heif"
	"github.com/attachctl/attachctl/shrink/rsstest"
)

// BenchmarkLyingHeaderRSS measures the peak RSS of a process that shrinks HEICs and AVIFs whose
// ispe says 64x48 over 4000x3000 pixels, as the command does (Go's heap held to 3/4 of
// --max-memory): one at a time under a 50 MB budget, six at once under 400 MB; and, for the
// process's own floor (runtime, the decoders' compiled code), the same files honest, which are
// asis from their header without a decode. Each run is a child process (the test binary) that
// reports its own peak (VmHWM: the rusage of a child counts the parent's memory at the fork).
func BenchmarkLyingHeaderRSS(b *testing.B) {
	if err := heif.Warm(); err != nil { // the children load the compiled code, not compile it
		b.Fatal(err)
	}
	dir := b.TempDir()
	for _, format := range []string{"heic", "avif"} {
		if err := os.WriteFile(filepath.Join(dir, "lying."+format), lying(b, format), 0o600); err != nil {
			b.Fatal(err)
		}
		honest, err := os.ReadFile(filepath.Join("testdata", "gradient-4000x3000."+format))
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "honest."+format), honest, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name      string
		maxMemory int64
		files     []string
	}{
		{"floor-honest-asis", 50_000_000, []string{"honest.heic", "honest.avif"}},
		{"heic-alone", 50_000_000, []string{"lying.heic"}},
		{"avif-alone", 50_000_000, []string{"lying.avif"}},
		{"six-jobs6", 400_000_000, []string{"lying.heic", "lying.avif", "lying.heic", "lying.avif", "lying.heic", "lying.avif"}},
	} {
		b.Run(c.name, func(b *testing.B) { childRSS(b, dir, c.maxMemory, c.files, "") })
	}
}

// BenchmarkTwelveMPRSS measures the peak RSS of a process that shrinks two honest 12 MP HEICs,
// or AVIFs, at once under the default --max-memory: both reservations fit it, so the two decode
// together (the child's stderr says what each became).
func BenchmarkTwelveMPRSS(b *testing.B) {
	if err := heif.Warm(); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	for _, format := range []string{"heic", "avif"} {
		honest, err := os.ReadFile(filepath.Join("testdata", "gradient-4000x3000."+format))
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range []string{"a", "b"} {
			if err := os.WriteFile(filepath.Join(dir, n+"."+format), honest, 0o600); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(format+"-two", func(b *testing.B) {
			childRSS(b, dir, DefaultMaxMemory, []string{"a." + format, "b." + format}, "resized")
		})
	}
}

// childRSS runs the child (child_test.go) over files of dir at once under maxMemory, b.N times,
// and reports the highest peak RSS; each file's line on its stderr must say want, when given.
func childRSS(b *testing.B, dir string, maxMemory int64, files []string, want string) {
	var paths []string
	for _, f := range files {
		paths = append(paths, filepath.Join(dir, f))
	}
	rsstest.ChildPeak(b, func(i int) []string {
		return []string{"SHRINK_CODE_CACHE=" + codeCache,
			fmt.Sprintf("SHRINK_CHILD=%d,%s,%s", maxMemory, filepath.Join(dir, fmt.Sprint("out", i)), strings.Join(paths, ","))}
	}, func(stderr string) string {
		if want != "" && strings.Count(stderr, " "+want+" ") != len(files) {
			return "does not say every file " + want
		}
		return ""
	})
	b.ReportMetric(float64(maxMemory)/(1<<20), "max-memory-MiB")
}
