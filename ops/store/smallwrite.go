package store

import (
	"context"
	"sync"

	"github.com/attachctl/attachctl/manifest/fault"
)

// Small sources in a batch (docs/store.md, the staging partial), written once over a backend's
// SmallBuilder: a source of at most one chunk streamed into a GroupBatch that builds small
// uploads is read whole in one pass and hashed, then built straight into its finished form for
// the batch's commit, with no unfinished upload of its own. It is not resumed byte by byte: a run
// killed before the commit leaves none of it finished, and the next run reads it again, which
// costs no more than comparing it would. Its room is reserved against the store's limits before
// anything of it is built (the reservation holds it while it waits for the commit, which the
// listing does not show), and dropped when it is taken apart; the commit drops it once published.

// SmallBuilder is a backend's build of small uploads for a GroupBatch of T.
type SmallBuilder[T any] interface {
	// BuildSmall builds the finished upload id named name, whose bytes are data, of BLAKE3 sum,
	// ready for the batch's commit. data is the caller's again once it returns.
	BuildSmall(id, name, sum string, data []byte) (T, error)
	// UnbuildSmall takes apart t, built and kept out of the batch: nothing of it is left.
	UnbuildSmall(t T)
}

// BuildsSmall makes b build the small sources streamed into it with sb (SmallWrite), each
// admitted against q's limits first.
func (b *GroupBatch[T, G]) BuildsSmall(q *Quota, sb SmallBuilder[T]) {
	b.smallQuota, b.small = q, sb
}

// SmallWrite is the write of src into the batch opts.Batch (opts with the backend's defaults)
// when src is small, at most one chunk, and the batch builds small uploads (BuildsSmall); else
// nil, and the backend writes src through an unfinished upload of its own.
func SmallWrite(src Source, opts StreamOptions) StreamWrite {
	if b, ok := opts.Batch.(smallBatch); ok && src.Size <= opts.Chunk {
		return b.smallWrite(src, opts.Progress)
	}
	return nil
}

// A Staging is the one staging area of a batch's small uploads, of type S, that a backend
// builds them in (the local store's staging partial): made at the batch's first small upload,
// under an upload id of its own, so that a batch of large sources makes none; and removed once
// the batch is idle (GroupCommitter.BatchIdle), when what is left in it failed and was reported,
// so that a later small upload makes a new one. Its zero value has none; it is safe for
// concurrent use.
type Staging[S any] struct {
	mu   sync.Mutex
	s    S
	made bool
}

// Get returns the staging area, made first by make with a new upload id when there is none.
func (st *Staging[S]) Get(make func(id string) (S, error)) (S, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.made {
		return st.s, nil
	}
	var none S
	id, err := NewID()
	if err != nil {
		return none, fault.Errorf(fault.UploadUnreadable, "new upload id: %v", err)
	}
	s, err := make(id)
	if err != nil {
		return none, err
	}
	st.s, st.made = s, true
	return s, nil
}

// Drop removes the staging area with remove, if there is one.
func (st *Staging[S]) Drop(remove func(S)) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.made {
		remove(st.s)
		var none S
		st.s, st.made = none, false
	}
}

// smallBatch is a GroupBatch as SmallWrite sees it (a backend's batch embeds one).
type smallBatch interface {
	smallWrite(src Source, progress func(int64)) StreamWrite
}

func (b *GroupBatch[T, G]) smallWrite(src Source, progress func(int64)) StreamWrite {
	if b.small == nil {
		return nil
	}
	return &smallUpload[T, G]{b: b, src: src, progress: progress}
}

// smallBufs recycles the buffers of small sources from one file to the next: a fresh buffer per
// file costs a first touch of every page, which on a VM is dearer than the copy itself.
var smallBufs sync.Pool

// smallUpload is the upload of a small source into the batch b: read and hashed in one pass,
// checked by StreamUpload, and built by the backend (GroupBuilder).
type smallUpload[T, G any] struct {
	b        *GroupBatch[T, G]
	src      Source
	progress func(int64)
	bp       *[]byte // the source's bytes, from smallBufs
	id       string
	release  func() // of its reservation, once built
}

func (w *smallUpload[T, G]) ID() string                     { return w.id }
func (w *smallUpload[T, G]) Stored() (StreamStored, error)  { return StreamStored{}, nil }
func (w *smallUpload[T, G]) Restart() error                 { return nil }
func (w *smallUpload[T, G]) Refuse(context.Context, string) {}

// Write reads the whole source at once; progress is told once it is built.
func (w *smallUpload[T, G]) Write(ctx context.Context, f SourceFile, _ int64, pass StreamPass) (*Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	bp, _ := smallBufs.Get().(*[]byte)
	if bp == nil || int64(cap(*bp)) < w.src.Size {
		nb := make([]byte, max(w.src.Size, 4<<10))
		bp = &nb
	}
	w.bp = bp
	buf := (*bp)[:w.src.Size]
	if err := ReadSource(f, buf, 0); err != nil {
		return nil, err
	}
	pass.Observe(buf)
	pass.Hash.Write(buf)
	return nil, nil
}

// Publish builds the upload in the batch, unless another worker of it built the same file
// (GroupBatch.Build).
func (w *smallUpload[T, G]) Publish(ctx context.Context, sum string) (*Info, error) {
	id, err := NewID()
	if err != nil {
		return nil, fault.Errorf(fault.UploadUnreadable, "new upload id: %v", err)
	}
	if w.id, err = w.b.Build(sum, w.src.Name, id, w); err != nil {
		return nil, err
	}
	w.progress(w.src.Size)
	return &Info{ID: w.id, Name: w.src.Name, Size: w.src.Size, Blake3: sum}, nil
}

// BatchBuild admits the upload against the store's limits, before anything is made, and has the
// backend build it (GroupBuilder).
func (w *smallUpload[T, G]) BatchBuild(id, sum string) (T, error) {
	release, err := w.b.smallQuota.AdmitID(context.Background(), id, w.src.Name, w.src.Size)
	if err != nil {
		var none T
		return none, err
	}
	t, err := w.b.small.BuildSmall(id, w.src.Name, sum, (*w.bp)[:w.src.Size])
	if err != nil {
		release()
		return t, err
	}
	w.release = release
	return t, nil
}

// BatchUnbuild takes the upload built and kept out of the batch apart, and drops its reservation.
func (w *smallUpload[T, G]) BatchUnbuild(t T, _ error) {
	w.b.small.UnbuildSmall(t)
	w.release()
}

func (w *smallUpload[T, G]) Close(error) {
	if w.bp != nil {
		smallBufs.Put(w.bp)
	}
}
