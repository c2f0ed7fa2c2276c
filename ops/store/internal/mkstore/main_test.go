//go:build unix

package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/attachctl/attachctl/ops"
	"github.com/attachctl/attachctl/ops/store/internal/local"
)

// The store mkstore lays out is one the local store reads as its own: every upload listed (none
// skipped), its layout checked and its bytes read back, the even ones made days ago, their folders as old (the benchmark's find
// judges them by their mtime), the others made now.
func TestLayoutReadsAsUploads(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	if err := run(dir, 6, 10); err != nil {
		t.Fatal(err)
	}
	b, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := b.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Entries) != 6 || len(l.Skipped) != 0 {
		t.Fatalf("listed %d, skipped %v; want 6 uploads", len(l.Entries), l.Skipped)
	}
	cut := time.Now().Add(-9 * 24 * time.Hour)
	old := 0
	for _, e := range l.Entries {
		if !e.Finished {
			t.Fatalf("%s: not finished", e.ID)
		}
		if err := b.Features().Checker.Check(context.Background(), e.ID); err != nil {
			t.Fatal(err)
		}
		r, err := b.Open(context.Background(), e.ID, e.Name)
		if err != nil {
			t.Fatal(err)
		}
		sum, n, err := ops.Hash(r, nil)
		r.Close()
		if err != nil || sum != e.Blake3 || n != e.Size {
			t.Fatalf("%s: read %d bytes of BLAKE3 %s (%v); listed %d, %s", e.ID, n, sum, err, e.Size, e.Blake3)
		}
		fi, err := os.Stat(filepath.Join(dir, e.ID))
		if err != nil {
			t.Fatal(err)
		}
		if e.Made.Before(cut) {
			old++
			if !fi.ModTime().Before(cut) {
				t.Fatalf("%s: made %v, its folder's mtime %v", e.ID, e.Made, fi.ModTime())
			}
		}
	}
	if old != 3 {
		t.Fatalf("%d uploads made days ago, want 3", old)
	}
}
