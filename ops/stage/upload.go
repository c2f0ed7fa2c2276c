package stage

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/sniff"
	"github.com/zeebo/blake3"
)

// DefaultChunk is the chunk of a backend that names none (store.Features' Chunk): 512 KiB, the
// --chunk default.
const DefaultChunk = 512 << 10

// Options tune an Uploader.
type Options struct {
	Chunk    int64       // bytes read and sent at once; 0: the backend's default
	Jobs     int         // parts sent at once where the backend sends parts in parallel
	Progress func(int64) // bytes got through, as they go (negative on a restart)
	// Resumed, when set, is told when an upload of the source at path is resumed, and at what
	// offset (store.StreamOptions.Resumed).
	Resumed func(path string, offset int64)
	// Batch, when set, is a batch of the backend (NewBatch) the uploads are published in: each
	// record must then be settled (Settle) before it is handed on, and Commit called at the end.
	Batch store.Batch
	// Walk is how a folder record's folder is walked again for its upload (tree.go): the same
	// skips as the walk that found it.
	Walk sniff.WalkOptions
	// More, when set, says whether more records are on their way to the stage; a batch that can
	// wait (store.Batch's SetMore) then commits them together. Wake is to be called when it turns false.
	More func() bool
}

// NewBatch is a batch of b's (store.Batcher), nil when b publishes each upload on its own.
func NewBatch(ctx context.Context, b store.Backend) (store.Batch, error) {
	if bb := b.Features().Batcher; bb != nil {
		return bb.NewBatch(ctx)
	}
	return nil, nil
}

// Uploader is the upload stage over one store: it puts the file each record names into the
// store and sets the record's upload.
type Uploader struct {
	b     store.Backend
	opts  Options
	batch store.Batch
}

// NewUploader checks opts against the backend (a chunk under its least is upload.invalid) and
// returns the stage.
func NewUploader(b store.Backend, opts Options) (*Uploader, error) {
	def, least := int64(DefaultChunk), ChunkLeast(b)
	if f := b.Features(); f.Chunk > 0 {
		def = f.Chunk
	}
	if opts.Chunk <= 0 {
		opts.Chunk = def
	}
	if opts.Chunk < least {
		return nil, fault.Errorf(fault.UploadInvalid, "--chunk on %s takes at least %d bytes, not %d", b.Location(), least, opts.Chunk)
	}
	opts.Jobs = max(opts.Jobs, 1)
	if opts.Batch != nil && opts.More != nil {
		opts.Batch.SetMore(opts.More)
	}
	return &Uploader{b: b, opts: opts, batch: opts.Batch}, nil
}

// ChunkLeast is the least chunk b takes.
func ChunkLeast(b store.Backend) int64 {
	return max(b.Features().LeastChunk, 1)
}

// Upload puts the file at rec.Path into the store under rec.Name (its base name when empty) and
// sets rec.Upload. The source is read once where the backend allows and hashed in the same pass;
// the hash must equal rec.Blake3 (upload.hashMismatch: the file is not what the manifest says),
// or sets it when empty. A file whose size or modification time moves while it is read is
// upload.sourceChanged. observe, when not nil, is shown every byte read (see
// store.StreamOptions.Observe). An interrupted upload (ctx cancelled) keeps what was written for
// a resume (upload.missing).
func (u *Uploader) Upload(ctx context.Context, rec *manifest.Record, observe func([]byte)) error {
	if rec.Kind == manifest.KindFolder {
		return u.uploadTree(ctx, rec)
	}
	abs, name, want, err := Source(rec)
	if err != nil {
		return err
	}
	f, size, err := sourceOf(rec, abs)
	if err != nil {
		return err
	}
	defer f.Close()
	if rec.HasSize && rec.Size != size && want != "" {
		return fault.Errorf(fault.UploadHashMismatch, "%s: is %d bytes, the manifest says %d (changed since it was sniffed)", abs, size, rec.Size)
	}
	src := store.Source{Path: abs, Name: name, Size: size, Blake3: want}
	var info *store.Info
	if s := u.b.Features().Streamer; s != nil {
		var resumed func(int64)
		if u.opts.Resumed != nil {
			resumed = func(off int64) { u.opts.Resumed(abs, off) }
		}
		info, err = s.Stream(ctx, src, f, store.StreamOptions{Chunk: u.opts.Chunk, Jobs: u.opts.Jobs,
			Progress: u.opts.Progress, Observe: observe, Resumed: resumed, Batch: u.batch})
	} else {
		info, err = u.plain(ctx, src, f, observe)
	}
	if errors.Is(err, context.Canceled) {
		// %.0w: the cause stays for errors.Is, out of the message.
		return fault.Errorf(fault.UploadInterrupted, "%s: interrupted before its upload finished; the partial is kept, run again to resume%.0w", abs, err)
	}
	if err != nil {
		return err
	}
	SetUpload(rec, u.b, info)
	return nil
}

// Settle is called on each record, in input order, before it is handed on: with a batch, it
// waits until the record's upload is published and fails the record when that failed.
func (u *Uploader) Settle(rec *manifest.Record) {
	if u.batch == nil || rec.Upload == nil {
		return
	}
	if err := u.batch.Settle(rec.Upload.ID); err != nil {
		rec.Upload = nil
		rec.Fail("upload", err, fault.UploadUnreadable)
	}
}

// Wake tells a batch waiting for more records (Options.More) to ask again.
func (u *Uploader) Wake() {
	if u.batch != nil {
		u.batch.Wake()
	}
}

// Commit publishes what the batch still holds (nothing when every record was settled).
func (u *Uploader) Commit() error {
	if u.batch == nil {
		return nil
	}
	return u.batch.Commit()
}

// plain is the upload of a backend with no Streamer: begun, written chunk by chunk and finished
// through the seam's own calls, the hash checked before the finish.
func (u *Uploader) plain(ctx context.Context, src store.Source, f store.SourceFile, observe func([]byte)) (*store.Info, error) {
	id, err := u.b.Begin(ctx, src.Name, src.Size)
	if err != nil {
		return nil, err
	}
	done := false
	defer func() {
		if !done {
			u.b.Abort(context.WithoutCancel(ctx), id)
		}
	}()
	h := blake3.New()
	buf := make([]byte, min(u.opts.Chunk, max(src.Size, 1)))
	for off := int64(0); off < src.Size; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := min(int64(len(buf)), src.Size-off)
		if k, err := f.ReadAt(buf[:n], off); int64(k) < n {
			return nil, fault.Errorf(fault.UploadSourceChange, "%s: changed while being read: %v", f.Name(), err)
		}
		h.Write(buf[:n])
		if observe != nil {
			observe(buf[:n])
		}
		if _, err := u.b.Write(ctx, id, off, bytes.NewReader(buf[:n])); err != nil {
			return nil, err
		}
		off += n
		if u.opts.Progress != nil {
			u.opts.Progress(n)
		}
	}
	if err := f.Unchanged(); err != nil {
		return nil, err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if src.Blake3 != "" && sum != src.Blake3 {
		return nil, fault.Errorf(fault.UploadHashMismatch, "%s: BLAKE3 is %s, the manifest says %s (changed since it was sniffed)", f.Name(), sum, src.Blake3)
	}
	info, err := u.b.Finish(ctx, id, src.Size, sum)
	if err == nil {
		done = true
	}
	return info, err
}

// SetUpload makes rec the record of the finished upload info of b.
func SetUpload(rec *manifest.Record, b store.Backend, info *store.Info) {
	rec.Name, rec.Blake3 = info.Name, info.Blake3
	rec.SetSize(info.Size)
	rec.Upload = &manifest.Upload{ID: info.ID, Store: b.Location(), Path: store.FinishedName(b, info.ID, info.Name)}
}

// RecordID is the upload rec names, after checking that it belongs to b: a record with no
// upload, or whose upload.store is another store, is upload.missing (the message names the store
// it belongs to). An empty upload.store is taken as b.
func RecordID(b store.Backend, rec *manifest.Record) (string, error) {
	if rec.Upload == nil || rec.Upload.ID == "" {
		return "", fault.Errorf(fault.UploadMissing, "%s: the record has no upload", rec.Path)
	}
	if st := rec.Upload.Store; st != "" && !sameLocation(st, b.Location()) {
		return "", fault.Errorf(fault.UploadMissing, "upload %s: belongs to store %s, not to %s (give --store %s)", rec.Upload.ID, st, b.Location(), st)
	}
	if err := store.ValidID(rec.Upload.ID); err != nil {
		return "", err
	}
	return rec.Upload.ID, nil
}
