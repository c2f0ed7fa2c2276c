// Package rsstest measures peak resident memory for the RSS benchmarks of shrink and resolve
// (ops/acp): each run is a child process (the test binary, told by its environment what to do)
// that reports its own peak, read from /proc/self/status. The rusage of a child (Maxrss) is no
// substitute: Go starts a child with vfork semantics, sharing the parent's memory until exec, and
// Linux carries that high-water mark into the child's (so it would report the benchmark's own
// peak); and it is KiB on Linux, bytes on macOS.
package rsstest

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// PrintPeak is the child's last word: its peak RSS in KiB on stdout.
func PrintPeak() error {
	kib, err := PeakKiB()
	if err != nil {
		return err
	}
	_, err = fmt.Println(kib)
	return err
}

// ChildPeak runs the test binary b.N times as a child with the environment env(i) added, and
// returns the highest peak RSS in bytes the children printed (PrintPeak), reported as
// peak-RSS-MiB. check judges each child's stderr ("": fine, else why not).
func ChildPeak(b *testing.B, env func(i int) []string, check func(stderr string) string) int64 {
	var peak int64
	for i := range b.N {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), env(i)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("%v\n%s", err, stderr.String())
		}
		if why := check(stderr.String()); why != "" || strings.Contains(stderr.String(), "panic") {
			b.Fatalf("the child's stderr %s:\n%s", why, stderr.String())
		}
		kib, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
		if err != nil {
			b.Fatalf("child said %q", out)
		}
		peak = max(peak, kib<<10)
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MiB")
	return peak
}
