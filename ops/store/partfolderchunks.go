package store

import (
	"context"
	"io"
)

// HeldData is an unfinished upload whose bytes are one file its writer holds locked (the local
// store's partial: its data file), as a step-by-step upload appends to it and finishes it
// (DataChunks). Its errors are coded.
type HeldData interface {
	// ID is its id; Meta its info, read under the lock.
	ID() string
	Meta() *PartialMeta
	// Size is what the file holds: the offset.
	Size() (int64, error)
	// WriteAt writes b at off; Sync makes what was written durable; Truncate cuts the file back
	// to n bytes, durably.
	WriteAt(b []byte, off int64) error
	Sync() error
	Truncate(n int64) error
	// Hash is the BLAKE3 of the file's first n bytes.
	Hash(n int64) (string, error)
	// Publish makes the upload finished, create-only, its first n bytes with BLAKE3 sum.
	Publish(n int64, sum string) (*Info, error)
	// Remove removes it, still locked, durably: an abort is not undone by a crash.
	Remove() error
	// Close releases the lock.
	Close()
}

// DataChunks is the unfinished upload p, held, as the step-by-step upload takes it up
// (ChunkBackend.OpenChunks): a chunk is streamed into the file (ChunkProperties.Buffer not set)
// in pieces of at most max bytes, cut back when refused or when it fails, and synced; a finish
// hashes the file and publishes it. p is closed when this fails.
func DataChunks(p HeldData, max int64) (ChunkUpload, error) {
	cur, err := p.Size()
	if err != nil {
		p.Close()
		return nil, err
	}
	m := p.Meta()
	return &dataChunks{p: p, max: max, st: m.Of().ChunkState(m.Size, cur)}, nil
}

type dataChunks struct {
	p   HeldData
	max int64
	st  ChunkState
}

func (u *dataChunks) State() ChunkState { return u.st }
func (u *dataChunks) Close()            { u.p.Close() }

// Append writes r at cur piece by piece (CopyChunk); a refusal or an error cuts the file back to
// cur (best effort: the error is the one returned).
func (u *dataChunks) Append(_ context.Context, cur int64, r io.Reader, limit int64, over func(int64) error) (int64, error) {
	n, err := CopyChunk(u.p.ID(), r, make([]byte, u.max), limit, over, func(b []byte, off int64) error {
		return u.p.WriteAt(b, cur+off)
	})
	if err == nil {
		err = u.p.Sync()
	}
	if err != nil {
		u.p.Truncate(cur)
		return cur, err
	}
	return cur + n, nil
}

func (u *dataChunks) Drop(context.Context) error { return u.p.Remove() }

// Publish hashes the file's bytes up to the offset, checks the sum and publishes them; a file
// held locked is published by no one else first.
func (u *dataChunks) Publish(_ context.Context, check func(string) error) (*Info, bool, error) {
	sum, err := u.p.Hash(u.st.Offset)
	if err != nil {
		return nil, false, err
	}
	if err := check(sum); err != nil {
		return nil, false, err
	}
	info, err := u.p.Publish(u.st.Offset, sum)
	return info, false, err
}
