//go:build unix

package local

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops/store"
)

func limitedStore(t *testing.T, l store.Limits) *Store {
	t.Helper()
	s, err := SetLimits(filepath.Join(t.TempDir(), "chat-1"), l)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A batch's staging partial is made after its first small upload is admitted, and until its
// info.json is written a listing takes it for an unfinished upload. Another process's check at
// that moment counted it as one more upload: under load, of five uploads against max-files 3 two
// finished and three were store.full, "it holds 3 uploads". The reservation names the staging
// partial, and it counts nothing.
func TestLimitsStagingBeingMade(t *testing.T) {
	s := limitedStore(t, store.Limits{MaxFiles: 2})
	b := s.NewBatch()
	x, _ := NewID()
	stage := b.stageID()
	if _, err := s.admitIn(x, "x.bin", 900, stage); err != nil {
		t.Fatal(err)
	}
	// The staging partial as makePartial leaves it for a moment: its folder and locked data, no
	// info.json yet.
	dir := s.partialDir(stage)
	if err := os.MkdirAll(dir, DirMode); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, partialData), nil, FileMode); err != nil {
		t.Fatal(err)
	}
	y, _ := NewID()
	if _, err := s.admit(y, "y.bin", 900); err != nil {
		t.Fatalf("a second upload beside one admitted whose staging partial is being made: %v; want admitted", err)
	}
	z, _ := NewID()
	_, err := s.admit(z, "z.bin", 900)
	wantCode(t, err, manifest.StoreFull)

	// The staging partial is made with the id its reservations name.
	b2 := s.NewBatch()
	want := b2.stageID()
	p, err := b2.staging()
	if err != nil {
		t.Fatal(err)
	}
	if p.id != want || b2.stageID() != want {
		t.Errorf("staging partial %s, stageID %s; want %s", p.id, b2.stageID(), want)
	}
	b2.dropStaging()
	if b2.stageID() == want {
		t.Error("a staging partial made after the last was dropped takes the same id")
	}
}

// upload chunk is counted with the live reservations (an upload another process admitted, not
// begun yet), not only with what the listing shows, and holds its bytes while it writes them.
func TestLimitsChunkCountsReservations(t *testing.T) {
	s := limitedStore(t, store.Limits{MaxBytes: 3000})
	id, err := s.Begin("a.bin", -1)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewID()
	if _, err := s.admit(other, "o.bin", 2500); err != nil {
		t.Fatal(err)
	}
	_, err = s.Chunk(id, 0, bytes.NewReader(make([]byte, 600)), 0)
	wantCode(t, err, manifest.StoreFull)
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
	wantCode(t, err, manifest.StoreFull)
	if off, err := s.Chunk(id, 0, bytes.NewReader(make([]byte, 400)), 0); err != nil || off != 400 {
		t.Fatalf("a chunk of 400 B with 500 B left: %d, %v", off, err)
	}
	more, _ := NewID()
	if _, err := s.admit(more, "m.bin", 100); err != nil {
		t.Fatalf("100 B more (2500 reserved, 400 written): %v", err)
	}
	last, _ := NewID()
	_, err = s.admit(last, "l.bin", 1)
	wantCode(t, err, manifest.StoreFull)
}
