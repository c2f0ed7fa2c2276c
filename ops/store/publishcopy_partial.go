package store

import (
	"context"
	"io"
)

// A stream into an unfinished upload kept as a folder its writer locks, its bytes one data file
// (TakePartial's), by a backend that finds its finished uploads by a FinishedIndex (the local
// store): where such a stream starts (StartCopy), and what its upload keeps for the engine
// (PartialStream), written over the backend's data file (PartialData). The backend writes the
// data, and publishes (PublishCopy).

// PartialData is such an unfinished upload, held: its info (HeldPartial) and its data file.
type PartialData interface {
	HeldPartial
	// Size is what the data file holds; Truncate cuts it back to n bytes, durably (as HeldData's).
	Size() (int64, error)
	Truncate(n int64) error
	// Data is the data file, read at any offset, and how an error reading it is coded.
	Data() (io.ReaderAt, func(error) error)
}

// StartCopy is StreamBackend.StartStream of such a backend: the finished upload of the same bytes
// and name the index finds (which the engine checks, and avoids when it is damaged), else a small
// source of a batch, built whole in the batch's staging (SmallWrite), else the write of the
// unfinished upload of the same source that take takes up or begins (TakePartial).
func StartCopy(st StreamStart, idx *FinishedIndex, from IndexSource, take func(run PartialOf, size int64) (StreamWrite, error)) (StreamFound, StreamWrite, error) {
	src := st.Src
	if id := idx.Find(from, src.Blake3, src.Name, st.Avoid); id != "" {
		return StreamFound{ID: id}, nil, nil
	}
	if w := SmallWrite(src, st.Opts); w != nil {
		return StreamFound{}, w, nil
	}
	w, err := take(PartialOf{Name: src.Name, Path: src.Path, Blake3: src.Blake3, Streamed: true}, src.Size)
	return StreamFound{}, w, err
}

// PartialStream is StreamWrite's ID, Stored, Restart, Refuse and Close of a stream into P; the
// backend adds Write and Publish.
type PartialStream[P PartialData] struct {
	P   P
	Old *PartialSource // the source P's data was written for (nil: new)
	// Batched: the batch holds P until it commits, and Close leaves it held.
	Batched bool
}

func (w *PartialStream[P]) ID() string { return w.P.ID() }

// Stored is P's data, to be read back and compared with the source: none when it is empty, else
// keyed by the source it was written for.
func (w *PartialStream[P]) Stored() (StreamStored, error) {
	n, err := w.P.Size()
	if err != nil || n == 0 {
		return StreamStored{}, err
	}
	data, code := w.P.Data()
	st := StreamStored{Data: data, N: n, Err: code}
	if w.Old != nil {
		st.Keyed, st.Size, st.Blake3 = true, w.Old.Size, w.Old.Blake3
	}
	return st, nil
}

// Restart drops P's data: the write starts from the first byte.
func (w *PartialStream[P]) Restart() error { return w.P.Truncate(0) }

// Refuse keeps P with what it holds, its info naming the BLAKE3 the source's bytes had, for a
// run with a fresh manifest.
func (w *PartialStream[P]) Refuse(_ context.Context, got string) {
	if src := w.P.Meta().Source; src != nil {
		src.Blake3 = got
	}
	w.P.WriteMeta()
}

// Close releases P, unless the batch holds it.
func (w *PartialStream[P]) Close(error) {
	if !w.Batched {
		w.P.Close()
	}
}
