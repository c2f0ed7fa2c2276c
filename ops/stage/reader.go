package stage

import (
	"context"
	"io"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/sniff"
)

// ReaderPiece is how much of a reader UploadReader hands the store in one write unless told:
// large enough that a store that makes each write durable pays that seldom, small enough to hold.
const ReaderPiece = 16 << 20

// ReaderOptions tune UploadReader.
type ReaderOptions struct {
	// Piece is the most one write hands the store (0: ReaderPiece).
	Piece int64
	// Begun, when set, is called once the upload is begun and before the reader is first read:
	// the command says there that it is about to read a terminal.
	Begun func(id string)
	// Progress, when set, is called with the byte count of each read.
	Progress func(int64)
}

// UploadReader uploads what r yields, to its end, as one file named name (`upload -`): begun with
// its size left open, written in pieces of at most o.Piece bytes and finished with the size it
// came to, as `upload begin`, `chunk` and `finish` would. An upload that fails is aborted, since a
// reader cannot be read again to resume it; one stopped by ctx is upload.interrupted.
func UploadReader(ctx context.Context, b store.Backend, name string, r io.Reader, o ReaderOptions) (*store.Info, error) {
	piece := o.Piece
	if piece <= 0 {
		piece = ReaderPiece
	}
	id, err := b.Begin(ctx, name, -1)
	if err != nil {
		return nil, err
	}
	if o.Begun != nil {
		o.Begun(id)
	}
	if o.Progress != nil {
		r = io.TeeReader(r, progressWriter(o.Progress))
	}
	var off int64
	for {
		n, werr := b.Write(ctx, id, off, io.LimitReader(r, piece))
		if werr != nil {
			err = werr
			break
		}
		if n == off { // the reader ended
			break
		}
		off = n
	}
	var info *store.Info
	if err == nil {
		info, err = b.Finish(ctx, id, -1, "")
	}
	if err != nil {
		b.Abort(context.WithoutCancel(ctx), id)
		if ctx.Err() != nil {
			err = fault.Errorf(fault.UploadInterrupted, "%s: interrupted; standard input cannot be read again, so nothing was kept", name)
		}
		return nil, err
	}
	return info, nil
}

// progressWriter counts what passes through it.
type progressWriter func(int64)

func (w progressWriter) Write(p []byte) (int, error) {
	w(int64(len(p)))
	return len(p), nil
}

// FinishedRecord is the manifest record of the finished upload info of b (`upload -`, `upload
// finish`): its path the finished file, its type sniffed from the head when that file is on this
// machine; size and hash are the upload's metadata.
func FinishedRecord(b store.Backend, info *store.Info) *manifest.Record {
	rec := &manifest.Record{Path: store.FinishedName(b, info.ID, info.Name)}
	if b.Features().Pather != nil {
		sniff.Fill(rec, sniff.Options{NoHash: true})
	}
	SetUpload(rec, b, info)
	return rec
}
