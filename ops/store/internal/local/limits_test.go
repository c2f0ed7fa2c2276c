//go:build unix

package local

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

func limitedStore(t *testing.T, l store.Limits) *localStore {
	t.Helper()
	nb, _ := New(filepath.Join(t.TempDir(), "chat-1"))
	s := nb.(*localStore)
	if err := s.quota.SetLimits(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	return s
}

// A batch's staging partial is made after its first small upload is admitted, and removed once
// its uploads are published: while its info.json is not written yet (or already removed), a
// listing takes it for an unfinished upload. Another process's check at that moment counted it
// as one more upload: under load, of five uploads against max-files 3 two finished and three
// were store.full, "it holds 3 uploads" (and, once that was mended for the making, a refusal
// now and then said "holds 4": the removal). Nameless, and named by no live reservation, it
// counts nothing.
func TestLimitsStagingBeingMade(t *testing.T) {
	s := limitedStore(t, store.Limits{MaxFiles: 2})
	x, _ := store.NewID()
	if _, err := s.quota.AdmitID(context.Background(), x, "x.bin", 900); err != nil {
		t.Fatal(err)
	}
	// The staging partial as makePartial leaves it for a moment, and removeAt as it empties it:
	// its folder and locked data, no info.json.
	stage, _ := store.NewID()
	dir := s.partialDir(stage)
	if err := os.MkdirAll(dir, DirMode); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, partialData), nil, FileMode); err != nil {
		t.Fatal(err)
	}
	y, _ := store.NewID()
	if _, err := s.quota.AdmitID(context.Background(), y, "y.bin", 900); err != nil {
		t.Fatalf("a second upload beside one admitted and a staging partial being made: %v; want admitted", err)
	}
	z, _ := store.NewID()
	_, err := s.quota.AdmitID(context.Background(), z, "z.bin", 900)
	wantCode(t, err, fault.StoreFull)
}

// upload chunk is counted with the live reservations (an upload another process admitted, not
// begun yet), not only with what the listing shows, and holds its bytes while it writes them.
func TestLimitsChunkCountsReservations(t *testing.T) {
	s := limitedStore(t, store.Limits{MaxBytes: 3000})
	id, err := s.Begin(context.Background(), "a.bin", -1)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := store.NewID()
	if _, err := s.quota.AdmitID(context.Background(), other, "o.bin", 2500); err != nil {
		t.Fatal(err)
	}
	_, err = s.Chunk(id, 0, bytes.NewReader(make([]byte, 600)), 0)
	wantCode(t, err, fault.StoreFull)
	f := filepath.Join(t.TempDir(), "c")
	if err := os.WriteFile(f, make([]byte, 600), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := os.Open(f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = s.Chunk(id, 0, r, 0)
	wantCode(t, err, fault.StoreFull)
	if off, err := s.Chunk(id, 0, bytes.NewReader(make([]byte, 400)), 0); err != nil || off != 400 {
		t.Fatalf("a chunk of 400 B with 500 B left: %d, %v", off, err)
	}
	more, _ := store.NewID()
	if _, err := s.quota.AdmitID(context.Background(), more, "m.bin", 100); err != nil {
		t.Fatalf("100 B more (2500 reserved, 400 written): %v", err)
	}
	last, _ := store.NewID()
	_, err = s.quota.AdmitID(context.Background(), last, "l.bin", 1)
	wantCode(t, err, fault.StoreFull)
}
