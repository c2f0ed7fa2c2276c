package store

import (
	"bytes"
	"context"
	"io"
	"os"

	"github.com/attachctl/attachctl/manifest/fault"
)

// The rules of the step-by-step upload (`upload begin`, `upload chunk`, `upload finish`), written
// once over a ChunkBackend: the offset a chunk must start at, the declared size and the store's
// limits it may not pass (a chunk is kept whole or not at all, its room reserved in the store's
// Quota while it is written), the checks before publishing, the reservation dropped at an abort,
// and the code of each failure. A backend gives only how it keeps the bytes: local, an append to
// its partial file under the partial's lock; S3, a chunk object written create-only at its
// offset; the in-memory store, a slice.

// ChunkBackend is what a backend implements so that WriteChunk and FinishChunks run over it.
type ChunkBackend interface {
	// ChunkProperties is what the backend's appends need.
	ChunkProperties() ChunkProperties

	// OpenChunks takes up the unfinished upload id for one append or finish, held (the local
	// store: locked) until Close. An upload that is not unfinished is upload.missing, with fin
	// its metadata when it is finished (or fin nil, where ChunkProperties.Finished tells).
	OpenChunks(ctx context.Context, id string) (up ChunkUpload, fin *Info, err error)

	// ChunkQuota is the store's limits and reservations.
	ChunkQuota() *Quota
}

// ChunkProperties are what a backend's step-by-step uploads can do, declared once.
type ChunkProperties struct {
	// Buffer: the backend keeps a chunk in one write (an object), so the engine reads it whole
	// first, and its length is known before its room is reserved. Else the backend's Append
	// streams it and keeps to the limit it is given.
	Buffer bool

	// Finished, when set, reads the finished upload id (upload.missing when it is not one): the
	// engine asks it when OpenChunks finds no unfinished upload and tells none finished, so that a
	// backend need tell only whether it holds one. DropLeftover, when set, removes what a finish
	// killed after its publish left of a finished upload as unfinished: the engine calls it for
	// every finished upload OpenChunks meets (openChunks).
	Finished     func(ctx context.Context, id string) (*Info, error)
	DropLeftover func(ctx context.Context, id string) error
}

// openChunks is b.OpenChunks, and when b finds no unfinished upload id, the finished upload id
// (fin) if it is one, as b tells or else as Finished reads it: a finish killed after its publish
// may have left some of its unfinished form, which goes as that finish would have removed it.
func openChunks(ctx context.Context, b ChunkBackend, id string) (up ChunkUpload, fin *Info, err error) {
	up, fin, err = b.OpenChunks(ctx, id)
	if fault.CodeOf(err) != fault.UploadMissing {
		return up, fin, err
	}
	p := b.ChunkProperties()
	if fin == nil && p.Finished != nil {
		if info, ierr := p.Finished(ctx, id); ierr == nil {
			fin = info
		}
	}
	if fin != nil && p.DropLeftover != nil {
		p.DropLeftover(ctx, id) // best effort: the next finish, stage or sweep tries again
	}
	return nil, fin, err
}

// ChunkState is an unfinished upload as a ChunkBackend holds it.
type ChunkState struct {
	Name   string
	Size   int64 // declared; -1: open
	Offset int64 // the bytes kept so far
	// Kind is what wrote it: "" the step-by-step upload; KindFile or KindFolder the upload stage
	// (a source's file, a folder); KindBatch a batch's staging area. Only "" takes chunks.
	Kind string
}

// The kinds of unfinished upload that are not the step-by-step upload's (ChunkState.Kind).
const (
	KindFile  = "file"
	KindBatch = "batch"
)

// ChunkUpload is one unfinished upload taken up by OpenChunks.
type ChunkUpload interface {
	// State is the upload as it was taken up.
	State() ChunkState

	// Append keeps what r holds at offset cur, whole or not at all: more than limit bytes
	// (limit < 0: no limit) is refused with over(n), n the bytes read so far, and nothing of it
	// kept; an error reading r is ChunkReadErr. Another writer at cur first: upload.offset, and
	// the current offset. It returns the new offset, durable when Append returns.
	Append(ctx context.Context, cur int64, r io.Reader, limit int64, over func(n int64) error) (int64, error)

	// Publish reads the upload's bytes, calls check with their BLAKE3 (its error keeps the
	// upload unfinished and is returned), and makes the upload finished, create-only, its
	// reservation dropped as every publish of the backend drops it (Quota.Done). already:
	// another finish published it first, info is that one's.
	Publish(ctx context.Context, check func(blake3 string) error) (info *Info, already bool, err error)

	// Drop removes the unfinished upload, whatever wrote it (AbortChunks). Close is still called.
	Drop(ctx context.Context) error

	Close()
}

// CheckBegin checks what `upload begin` is given.
func CheckBegin(name string, size int64) error {
	if err := ValidName(name); err != nil {
		return err
	}
	return checkSize(size)
}

func checkSize(size int64) error {
	if size < -1 {
		return fault.Errorf(fault.UploadInvalid, "size %d: not a size (use -1 or leave it out for an open size)", size)
	}
	return nil
}

// ChunkReadErr is the error of reading a chunk's bytes from its producer.
func ChunkReadErr(id string, err error) error {
	return fault.Errorf(fault.FileUnreadable, "upload %s: reading the chunk: %v", id, err)
}

// ReadChunk reads what r holds whole, for an Append that keeps a chunk in one write: more than
// limit bytes (limit < 0: no limit) is over(n).
func ReadChunk(id string, r io.Reader, limit int64, over func(n int64) error) ([]byte, error) {
	if limit >= 0 {
		r = io.LimitReader(r, limit+1)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, ChunkReadErr(id, err)
	}
	if limit >= 0 && int64(len(b)) > limit {
		return nil, over(int64(len(b)))
	}
	return b, nil
}

// CopyChunk is ReadChunk for an Append that streams a chunk instead: what r holds is handed to
// write piece by piece as it is read, at most len(buf) bytes at a time, each with its offset from
// the chunk's start, to r's end. More than limit bytes (limit < 0: no limit) is over(n), and the
// piece that would pass it is not written. It returns the bytes written; after an error none of
// them is to be kept (the caller cuts them off).
func CopyChunk(id string, r io.Reader, buf []byte, limit int64, over func(n int64) error, write func(b []byte, off int64) error) (int64, error) {
	var done int64
	for {
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			if limit >= 0 && done+int64(n) > limit {
				return done, over(done + int64(n))
			}
			if err := write(buf[:n], done); err != nil {
				return done, err
			}
			done += int64(n)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			return done, nil
		}
		if rerr != nil {
			return done, ChunkReadErr(id, rerr)
		}
	}
}

// OffsetErr is the refusal of a chunk at offset of the upload id whose offset is cur.
func OffsetErr(id string, offset, cur int64) error {
	return fault.Errorf(fault.UploadOffset, "upload %s: offset %d is not the current offset %d", id, offset, cur)
}

// refuseStaged is the refusal of a chunk or a finish of an upload the step-by-step upload did not
// begin; verb is what the upload stage run again does to it.
func refuseStaged(id string, st ChunkState, verb string) error {
	switch st.Kind {
	case "":
		return nil
	case KindFolder:
		return fault.Errorf(fault.UploadInvalid, "upload %s: an unfinished folder upload; run the upload of the folder again to %s it", id, verb)
	case KindBatch:
		return fault.Errorf(fault.UploadInvalid, "upload %s: the staging folder of a batch of small uploads, not an upload of its own", id)
	}
	return fault.Errorf(fault.UploadInvalid, "upload %s: written by the upload stage; run the same upload again to %s it", id, verb)
}

// WriteChunk appends what r holds to the unfinished upload id of b, whose current offset must be
// offset (upload.offset otherwise, and the current offset is returned). It is taken whole or not
// at all: a chunk that would pass the declared size is upload.pastSize, one that would pass the
// store's limits is refused by them, and none of it is kept.
func WriteChunk(ctx context.Context, b ChunkBackend, id string, offset int64, r io.Reader) (int64, error) {
	if err := ValidID(id); err != nil {
		return 0, err
	}
	up, fin, err := openChunks(ctx, b, id)
	if err != nil {
		if fin != nil {
			return fin.Size, fault.Errorf(fault.UploadOffset, "upload %s: finished at offset %d; it takes no more chunks", id, fin.Size)
		}
		return 0, err
	}
	defer up.Close()
	st := up.State()
	if err := refuseStaged(id, st, "resume"); err != nil {
		return 0, err
	}
	cur := st.Offset
	if offset != cur {
		return cur, OffsetErr(id, offset, cur)
	}
	room := int64(-1) // to the declared size
	if st.Size >= 0 {
		room = st.Size - cur
	}
	pastSize := func(n int64) error {
		return fault.Errorf(fault.UploadPastSize,
			"upload %s: a chunk of %d or more bytes at offset %d would pass the declared size %d; none of it was kept", id, n, cur, st.Size)
	}
	// Its length, when known before anything is kept: a buffered chunk, or a regular file.
	n := int64(-1)
	if b.ChunkProperties().Buffer {
		lr := r
		if room >= 0 {
			lr = io.LimitReader(r, room+1)
		}
		buf, err := io.ReadAll(lr)
		if err != nil {
			return cur, ChunkReadErr(id, err)
		}
		n, r = int64(len(buf)), bytes.NewReader(buf)
	} else if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			if pos, err := f.Seek(0, io.SeekCurrent); err == nil {
				n = fi.Size() - pos
			}
		}
	}
	if room >= 0 && n > room {
		return cur, pastSize(n)
	}
	quota, overQuota, release, err := b.ChunkQuota().Chunk(ctx, id, st.Name, cur, n)
	if err != nil {
		return cur, err
	}
	defer release()
	if quota >= 0 && n > quota {
		return cur, overQuota(cur + n)
	}
	if n == 0 {
		return cur, nil
	}
	limit := room
	if quota >= 0 && (limit < 0 || quota < limit) {
		limit = quota
	}
	over := func(k int64) error {
		if room >= 0 && k > room {
			return pastSize(k)
		}
		return overQuota(cur + k)
	}
	if err := ctx.Err(); err != nil {
		return cur, err
	}
	return up.Append(ctx, cur, r, limit, over)
}

// FinishChunks checks the unfinished upload id of b against size (-1: not checked; a size left
// open at begin is fixed here) and blake3 (hex, "": not checked) and publishes it create-only:
// upload.sizeMismatch and upload.hashMismatch keep it unfinished. While it publishes, its bytes
// are held in the store's limits (Quota.Hold). Finishing a finished upload returns it after the
// same checks, so that a finish that crashed after publishing can be run again.
func FinishChunks(ctx context.Context, b ChunkBackend, id string, size int64, blake3 string) (*Info, error) {
	if err := ValidID(id); err != nil {
		return nil, err
	}
	want, err := CheckHex(blake3)
	if err != nil {
		return nil, err
	}
	if err := checkSize(size); err != nil {
		return nil, err
	}
	up, fin, err := openChunks(ctx, b, id)
	if err != nil {
		if fin != nil {
			return fin, CheckFinished(fin, size, want)
		}
		return nil, err
	}
	defer up.Close()
	st := up.State()
	if err := refuseStaged(id, st, "finish"); err != nil {
		return nil, err
	}
	if st.Size >= 0 && size >= 0 && st.Size != size {
		return nil, fault.Errorf(fault.UploadSizeMismatch, "upload %s: declared %d bytes at begin, %d at finish", id, st.Size, size)
	}
	if size < 0 {
		size = st.Size
	}
	if size >= 0 && st.Offset != size {
		return nil, fault.Errorf(fault.UploadSizeMismatch, "upload %s: has %d bytes, expected %d", id, st.Offset, size)
	}
	// Its bytes are held in the store's limits while it moves from unfinished to finished, where
	// another process's check may see it in neither place.
	done, err := b.ChunkQuota().Hold(ctx, id, st.Name, st.Offset)
	if err != nil {
		return nil, err
	}
	info, already, err := up.Publish(ctx, func(got string) error {
		if want != "" && got != want {
			return fault.Errorf(fault.UploadHashMismatch, "upload %s: BLAKE3 of the %d bytes is %s, expected %s", id, st.Offset, got, want)
		}
		return nil
	})
	done(err == nil)
	if err != nil {
		return nil, err
	}
	if already { // finished meanwhile by another finish: the same checks hold
		if err := CheckFinished(info, size, want); err != nil {
			return nil, err
		}
	}
	return info, nil
}

// AbortChunks removes the unfinished upload id of b, whatever wrote it, and its reservation in the
// store's limits. A finished upload is not removed (that is rm's or a sweep's): upload.invalid.
func AbortChunks(ctx context.Context, b ChunkBackend, id string) error {
	if err := ValidID(id); err != nil {
		return err
	}
	up, fin, err := openChunks(ctx, b, id)
	if err != nil {
		if fin != nil {
			return fault.Errorf(fault.UploadInvalid, "upload %s: finished; abort removes only unfinished uploads", id)
		}
		return err
	}
	defer up.Close()
	if err := up.Drop(ctx); err != nil {
		return err
	}
	return b.ChunkQuota().Drop(ctx, id)
}

// CheckFinished checks the finished upload info against what a finish expects: size (-1: not
// checked) and want (hex, "": not checked).
func CheckFinished(info *Info, size int64, want string) error {
	if size >= 0 && size != info.Size {
		return fault.Errorf(fault.UploadSizeMismatch, "upload %s: finished with %d bytes, not %d", info.ID, info.Size, size)
	}
	if want != "" && want != info.Blake3 {
		return fault.Errorf(fault.UploadHashMismatch, "upload %s: finished with BLAKE3 %s, not %s", info.ID, info.Blake3, want)
	}
	return nil
}
