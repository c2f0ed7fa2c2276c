package store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
)

// heldData is a PartialData in memory.
type heldData struct {
	meta   PartialMeta
	data   []byte
	closed int
	writes int
}

func (p *heldData) ID() string                             { return "0190c4d2-0000-7000-8000-000000000009" }
func (p *heldData) Meta() *PartialMeta                     { return &p.meta }
func (p *heldData) WriteMeta() error                       { p.writes++; return nil }
func (p *heldData) Close()                                 { p.closed++ }
func (p *heldData) Truncate(n int64) error                 { p.data = p.data[:n]; return nil }
func (p *heldData) Size() (int64, error)                   { return int64(len(p.data)), nil }
func (p *heldData) Data() (io.ReaderAt, func(error) error) { return bytes.NewReader(p.data), nil }

// TestPartialStream: an empty data file holds nothing to compare; one with bytes is keyed by the
// source they were written for; a restart empties it; a refusal keeps the upload, its info naming
// the BLAKE3 read; a batched upload is left held by Close.
func TestPartialStream(t *testing.T) {
	p := &heldData{meta: PartialMeta{Name: "a.bin", Source: &PartialSource{Path: "/a.bin", Blake3: "old", Size: 9}}}
	w := &PartialStream[*heldData]{P: p, Old: &PartialSource{Size: 9, Blake3: "old"}}
	if st, err := w.Stored(); err != nil || st.Data != nil || st.N != 0 {
		t.Fatalf("empty: %+v %v", st, err)
	}
	p.data = []byte("abc")
	if st, err := w.Stored(); err != nil || st.N != 3 || !st.Keyed || st.Size != 9 || st.Blake3 != "old" {
		t.Fatalf("stored: %+v %v", st, err)
	}
	if err := w.Restart(); err != nil || len(p.data) != 0 {
		t.Fatalf("restart: %v, %q left", err, p.data)
	}
	w.Refuse(context.Background(), "got")
	if p.meta.Source.Blake3 != "got" || p.writes != 1 || p.closed != 0 {
		t.Fatalf("refused: source %+v, %d writes, closed %d", p.meta.Source, p.writes, p.closed)
	}
	w.Batched = true
	w.Close(nil)
	if p.closed != 0 {
		t.Fatal("a batched upload was released")
	}
	w.Batched = false
	w.Close(errors.New("failed"))
	if p.closed != 1 {
		t.Fatal("not released")
	}
}

// TestStartCopy: a finished upload the index finds is found (the engine checks it), unless it is
// the one to avoid; else the source's unfinished upload is taken, for the source's name, path
// and BLAKE3.
func TestStartCopy(t *testing.T) {
	idx := &FinishedIndex{}
	done := "0190c4d2-0000-7000-8000-000000000001"
	idx.Add(&Info{ID: done, Name: "a.bin", Size: 3, Blake3: "b3"})
	src := Source{Path: "/x/a.bin", Name: "a.bin", Size: 3, Blake3: "b3"}
	var took []PartialOf
	take := func(run PartialOf, size int64) (StreamWrite, error) {
		took = append(took, run)
		return &memStream{id: "new"}, nil
	}
	found, w, err := StartCopy(StreamStart{Src: src}, idx, nil, take)
	if err != nil || found.ID != done || w != nil || len(took) != 0 {
		t.Fatalf("found %+v %v %v, took %v", found, w, err, took)
	}
	found, w, err = StartCopy(StreamStart{Src: src, Avoid: done}, idx, nil, take)
	want := PartialOf{Name: "a.bin", Path: "/x/a.bin", Blake3: "b3", Streamed: true}
	if err != nil || found.ID != "" || w == nil || len(took) != 1 || took[0] != want {
		t.Fatalf("avoided: %+v %v %v, took %+v", found, w, err, took)
	}
}
