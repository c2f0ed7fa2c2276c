//go:build unix

package local

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/sweep"
)

// BenchmarkList is `ls` of a store of 1,000 finished uploads: the listing row of the bench,
// without the process's start.
func BenchmarkList(b *testing.B) {
	ctx := context.Background()
	s := benchStore(b, 1000)
	b.ReportAllocs()
	for b.Loop() {
		l, err := s.List(ctx)
		if err != nil || len(l.Entries) != 1000 {
			b.Fatalf("listed %d, %v; want 1000", len(l.Entries), err)
		}
	}
}

// BenchmarkSweepDryRun is `sweep --dry-run` of the same store with a cutoff that finds every
// upload stale: the listing, then each upload read again as a real sweep re-checks it.
func BenchmarkSweepDryRun(b *testing.B) {
	ctx := context.Background()
	s := benchStore(b, 1000)
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		_, err := sweep.Run(ctx, s, sweep.Options{Before: time.Now().Add(time.Hour), DryRun: true}, func(sweep.Removed) error {
			n++
			return nil
		})
		if err != nil || n != 1000 {
			b.Fatalf("a dry run found %d stale, %v; want 1000", n, err)
		}
	}
}

// benchStore is a new store holding n small finished uploads.
func benchStore(b *testing.B, n int) store.Backend {
	ctx := context.Background()
	s, err := New(b.TempDir() + "/s")
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		data := []byte(fmt.Sprintf("file %d\n", i))
		id, err := s.Begin(ctx, fmt.Sprintf("f%d.txt", i), int64(len(data)))
		if err == nil {
			_, err = s.Write(ctx, id, 0, bytes.NewReader(data))
		}
		if err == nil {
			_, err = s.Finish(ctx, id, int64(len(data)), "")
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	return s
}
