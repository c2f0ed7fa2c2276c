package store

import (
	"context"
	"encoding/hex"
	"errors"
	"sync"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/zeebo/blake3"
)

// A large object written as a multipart upload (S3's): its parts are sent apart, several at once,
// and Complete makes them one object. Which parts are sent, how many at once, what a failure
// stops, when the upload is aborted, and what a part held of an earlier run must be to be kept
// are written here once; the backend gives the calls (PartUpload).

// PartUpload is one multipart upload of an object, begun by the backend.
type PartUpload interface {
	// Send sends b as part n (from 1): ErrNoObject when the multipart upload is not there any
	// more; any other error carries its code.
	Send(ctx context.Context, n int32, b []byte) (Part, error)
	// Tag is what the backend holds of a part of the bytes b (S3: its ETag, their MD5), by which
	// a part held of an earlier run is known to be them.
	Tag(b []byte) string
	// Complete makes the object of parts, create-only when told: ErrObjectChanged when another
	// object was there first, ErrNoObject when the multipart upload is not there any more.
	Complete(ctx context.Context, parts []Part, createOnly bool) error
	// Abort drops the multipart upload, what its parts hold with it.
	Abort(ctx context.Context)
	// Gone tells whether the multipart upload is not there any more (asked after a failure).
	Gone(ctx context.Context) bool
}

// Part is a part sent, or held by the backend: its number, its size and its Tag.
type Part struct {
	N    int32
	Size int64
	Tag  string
}

// SendParts sends the source f as the parts of m in the pass of Pump (read here, hashed on
// another core), part n the bytes from (n-1) x pass.Chunk, each part not held already with the
// same bytes (held: a part of the same size and Tag) on a goroutine of its own. Buffers go round
// free, and a part holds its buffer until it is sent: so at most cap(free) parts are in flight,
// and that many chunks in memory. It returns the parts for Complete.
func SendParts(ctx context.Context, m PartUpload, f SourceFile, held map[int32]Part, pass StreamPass, free chan []byte) ([]Part, error) {
	chunk := pass.Chunk
	done := make([]Part, (pass.Size+chunk-1)/chunk)
	// A part's failure stops the sending of more, but does not cut the parts in flight: the
	// server goes on with a part whose client gave up, and one it takes after the caller aborted
	// the multipart upload makes it hold the upload again (versitygw's posix backend). So every
	// part sent is answered before this returns; only the caller's cancel cuts them.
	send := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	err := Pump(ctx, f, 0, pass, free, func(off int64, b []byte, release func()) error {
		n := int32(off/chunk) + 1
		if p, ok := held[n]; ok && p.Size == int64(len(b)) && p.Tag == m.Tag(b) {
			done[n-1] = p
			release()
			return nil
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer release()
			p, err := m.Send(send, n, b)
			if err != nil {
				cancel(err)
				return
			}
			done[n-1] = p
		}()
		return nil
	})
	wg.Wait()
	if err == nil || ctx.Err() != nil {
		err = context.Cause(ctx) // a part's failure, or the caller's cancel
	}
	if err != nil {
		return nil, err
	}
	return done, nil
}

// PutParts writes size bytes of src as the multipart upload m, begun for it, in parts of chunk
// bytes sent jobs at once with the buffers of free, and completes it (create-only when told:
// ErrObjectChanged when another object was there) once check takes the BLAKE3 of the bytes sent.
// Anything failed, it is aborted; one gone meanwhile is upload.unreadable about what.
func PutParts(ctx context.Context, m PartUpload, what string, src SourceFile, size, chunk int64, jobs int, free chan []byte, createOnly bool, check func(sent string) error) error {
	h := blake3.New()
	parts, err := SendParts(ctx, m, src, nil, StreamPass{Size: size, Chunk: chunk, Jobs: jobs, Hash: h,
		Observe: func([]byte) {}, Progress: func(int64) {}}, free)
	if err == nil {
		err = check(hex.EncodeToString(h.Sum(nil)))
	}
	if err == nil {
		err = m.Complete(ctx, parts, createOnly)
	}
	if errors.Is(err, ErrNoObject) {
		err = fault.Errorf(fault.UploadUnreadable, "%s: its multipart upload went away (a sweep?)", what)
	}
	if err != nil {
		m.Abort(context.WithoutCancel(ctx))
	}
	return err
}

// MultipartWrite is a stream's write as a multipart upload (NoteWrite), resumed from the parts
// the backend holds of an earlier run (Kept, by number), each sent again unless it holds the
// source's bytes. Its completion is create-only.
type MultipartWrite struct {
	M    PartUpload
	Kept map[int32]Part
	Free func(pass StreamPass) chan []byte // the buffers of a pass (SendParts)
	done []Part                            // the parts for the completion, once sent
}

// Held is the bytes of the parts kept, each checked against the source as it is sent.
func (w *MultipartWrite) Held() int64 {
	var kept int64
	for _, p := range w.Kept { // none for an empty source: its note is keyed on its size
		kept += p.Size
	}
	return kept
}

func (w *MultipartWrite) Restart() { w.Kept = nil }

// Send sends the parts; a failure while the multipart upload went away (a server may answer a
// part of an upload completed meanwhile by resetting the connection) is ErrWriteGone.
func (w *MultipartWrite) Send(ctx context.Context, f SourceFile, _ int64, pass StreamPass) error {
	var err error
	w.done, err = SendParts(ctx, w.M, f, w.Kept, pass, w.Free(pass))
	if errors.Is(err, ErrNoObject) || err != nil && ctx.Err() == nil && w.M.Gone(ctx) {
		return ErrWriteGone
	}
	return err
}

// Complete completes the upload create-only: false when another run completed it first.
func (w *MultipartWrite) Complete(ctx context.Context) (bool, error) {
	err := w.M.Complete(ctx, w.done, true)
	if errors.Is(err, ErrObjectChanged) || errors.Is(err, ErrNoObject) {
		return false, nil
	}
	return err == nil, err
}
