package store

import (
	"context"
	"io"
)

// What the stages above the seam (ops/stage: upload with resume, verify, touch) may ask of a
// backend besides Backend. Each is optional, tusd style: a backend declares the ones it has in
// its Features, and a stage uses one when declared and falls back to Backend's methods when not. None of them sees a manifest record: the
// stage turns records into these types and back.

// Source is the file an upload stage puts into the store, as the stage has checked it: what a
// resume and a re-upload of the same file are keyed on.
type Source struct {
	Path   string // absolute
	Name   string // the plain name it is uploaded under
	Size   int64  // bytes at open
	Blake3 string // hex, "" when not known before the bytes are read
}

// SourceFile is the open source file: read at any offset, and asked at the end whether it moved.
type SourceFile interface {
	io.ReaderAt
	// Name is the file's path, for messages.
	Name() string
	// Unchanged is upload.sourceChanged when the file's size or modification time moved since it
	// was opened, or it grew.
	Unchanged() error
}

// StreamOptions tune a Streamer.
type StreamOptions struct {
	Chunk    int64         // bytes read and sent at once (a part on S3); <= 0: the backend's default
	Jobs     int           // parts sent at once, where the backend sends parts in parallel
	Progress func(n int64) // bytes got through, as they go (negative on a restart)
	// Observe, when set, is shown every byte of the source read, from the first, in order; a
	// restart of the pass calls it with nil (forget what you saw). The upload stage finishes a
	// sniff of the head with it, so that `upload FILE` reads FILE once.
	Observe func(p []byte)
	// Resumed, when set, is called once when an unfinished upload of the same source is taken up
	// again, with how many of its bytes are kept (checked against the source: the local store
	// after reading them back, S3 the parts the server holds), so that a person is told.
	Resumed func(offset int64)
	// Batch, when set, is a Batch of this backend (Batcher): the upload is built but published
	// only when the batch commits. Another store's is upload.invalid (StreamUpload).
	Batch Batch
}

// Streamer is a backend that puts a whole source file into the store better than Begin, Write
// and Finish one chunk after another (S3: parts sent in parallel, resumed by their ETags; the
// local store: read, write and hash on two cores, writeback started early, the group commit).
//
// Stream resumes the unfinished upload of the same source (path, name, size, and BLAKE3 when
// known) that no other process holds, sending only what the store does not hold with the same
// bytes, and names again a finished upload of the same BLAKE3 and name instead of a second copy.
// It returns the finished upload (or, with a Batch, the one that will be once committed). A
// source whose bytes are not src.Blake3 is upload.hashMismatch. ctx cancelled: it stops, keeps
// what was written for a resume, and returns ctx.Err().
type Streamer interface {
	Stream(ctx context.Context, src Source, f SourceFile, opts StreamOptions) (*Info, error)
}

// Batcher is a backend that publishes many uploads at once (the local store: one flush for a
// group of files).
type Batcher interface {
	NewBatch(ctx context.Context) (Batch, error)
}

// Batch is a group of uploads published together.
type Batch interface {
	// Settle returns once upload id is published (committing the batch when needed), or its
	// error; for an id the batch does not hold, nil.
	Settle(id string) error
	// Commit publishes everything the batch holds.
	Commit() error
	// SetMore gives the batch more, which says whether more uploads are on their way: Settle
	// may then wait for them and commit them together. Wake is called when more turns false.
	// A batch that never waits ignores both.
	SetMore(more func() bool)
	Wake()
}

// Checker is a backend with rules of its own about an upload's layout beyond the guarded open
// (the local store: folder and file modes, owner, links, no stray entry). Verify asks it first.
type Checker interface {
	Check(ctx context.Context, id string) error
}

// Namer is a backend whose finished uploads have a name other than a local path (S3: their
// s3:// URI), for records and messages.
type Namer interface {
	FinishedURI(id, name string) string
}

// FinishedName is how records and messages name a finished upload of b: its path on this
// machine (Pather), else its URI (Namer), else "".
func FinishedName(b Backend, id, name string) string {
	switch f := b.Features(); {
	case f.Pather != nil:
		return f.Pather.FinishedPath(id, name)
	case f.Namer != nil:
		return f.Namer.FinishedURI(id, name)
	}
	return ""
}
