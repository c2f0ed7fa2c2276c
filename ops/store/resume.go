package store

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"io"
	"sync"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/zeebo/blake3"
)

// The rules every Streamer follows when it puts a source into the store and resumes an earlier
// run of it, written once: a source whose BLAKE3 the record does not give is hashed whole first
// (HashSource), what an earlier run stored is kept only as far as it equals the source
// (KeepPrefix), and a source whose bytes are not the record's is upload.hashMismatch
// (HashMismatch). What the bytes are stored in, and how an unfinished upload of the same source
// is found again, is each backend's.

// WithDefaults fills what opts leaves out: the backend's chunk def, a progress that is not told.
func (opts StreamOptions) WithDefaults(def int64) StreamOptions {
	if opts.Chunk <= 0 {
		opts.Chunk = def
	}
	if opts.Progress == nil {
		opts.Progress = func(int64) {}
	}
	return opts
}

// HashMismatch is the refusal of the source path whose bytes hash to got, not to the record's
// want.
func HashMismatch(path, got, want string) error {
	return fault.Errorf(fault.UploadHashMismatch, "%s: BLAKE3 is %s, the manifest says %s (changed since it was sniffed)", path, got, want)
}

// sourceBufs recycles the buffers of the reads of sources (Pump) from one file to the next: a
// fresh buffer per file costs a first touch of every page, dearer on a VM than the read itself.
var sourceBufs sync.Pool

// HashSource reads the whole source of size bytes once, in chunks, and returns its BLAKE3,
// showing each byte to observe (nil: none). upload.sourceChanged when it moves meanwhile;
// ctx cancelled: ctx.Err().
func HashSource(ctx context.Context, src SourceFile, size, chunk int64, observe func([]byte)) (string, error) {
	if observe == nil {
		observe = func([]byte) {}
	}
	h := blake3.New()
	// Two buffers: one read while the other is hashed.
	pass := StreamPass{Size: size, Chunk: chunk, Hash: h, Observe: observe, Progress: func(int64) {}, Bufs: 2}
	if err := Pump(ctx, src, 0, pass, nil, func(_ int64, _ []byte, done func()) error { done(); return nil }); err != nil {
		return "", err
	}
	if err := src.Unchanged(); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ReadSource reads len(b) bytes of src at off: a source shorter than at open has changed. An
// error the source coded itself (a store's own bytes read back: S3's chunks) keeps its code.
func ReadSource(src SourceFile, b []byte, off int64) error {
	k, err := src.ReadAt(b, off)
	if k < len(b) {
		if fault.CodeOf(err) != "" {
			return err
		}
		if err == io.EOF {
			return fault.Errorf(fault.UploadSourceChange, "%s: changed while being read", src.Name())
		}
		return fault.Errorf(fault.FileUnreadable, "%s: %v", src.Name(), err)
	}
	return nil
}

// KeepPrefix compares the n bytes an earlier run stored (stored, read at any offset) with the
// source's first n, chunk by chunk, writing what it reads of the source to h, observe and
// progress as it goes. It returns how many are kept: n when they all equal the source, else 0,
// with h reset, observe told to forget (nil) and progress taken back, so that the write starts
// over. storeErr codes an error reading stored. A resume is told (resumed, when set) the offset
// it goes on from.
func KeepPrefix(ctx context.Context, src SourceFile, stored io.ReaderAt, n, chunk int64, h *blake3.Hasher, observe func([]byte), progress func(int64), resumed func(int64), storeErr func(error) error) (int64, error) {
	if n <= 0 {
		return 0, nil
	}
	dbuf := make([]byte, min(chunk, n))
	var pos int64
	pass := StreamPass{Size: n, Chunk: chunk, Hash: h, Observe: observe, Progress: func(k int64) { pos += k; progress(k) }}
	err := Pump(ctx, src, 0, pass, nil, func(off int64, b []byte, done func()) error {
		defer done()
		if _, err := stored.ReadAt(dbuf[:len(b)], off); err != nil {
			return storeErr(err)
		}
		if !bytes.Equal(b, dbuf[:len(b)]) {
			return errDiffer
		}
		return nil
	})
	if err == errDiffer {
		progress(-pos) // the source changed since the earlier run stored it: start over
		h.Reset()
		observe(nil)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if resumed != nil {
		resumed(pos)
	}
	return pos, nil
}

// errDiffer: what an earlier run stored is not the source's prefix.
var errDiffer = errors.New("the stored bytes differ from the source")
