//go:build unix

package local

import (
	"context"
	"io"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// fsync policy of the stage: writeback of every writebackEvery bytes written is started at once
// (sync_file_range, no wait), data is fdatasynced when the run is interrupted and fsynced at
// finish. A killed process loses nothing that reached write(2) (the page cache keeps it); a crash
// of the machine loses at most what the disk had not taken yet (the started writeback, or the
// kernel's dirty expiry, 30 s by default), and the resume compares what is there with the source
// anyway. Measured on a 2 GiB upload: periodic fdatasyncs were 10-40% slower, and leaving all
// writeback to finish's fsync (as cp then sync does) about 15% slower, than this.
const writebackEvery = 8 << 20

// Stream is the local store's upload of a whole source (store.Streamer), by the rules of
// store.StreamUpload. The source is read once, in chunks of at most opts.Chunk bytes, and hashed
// in the same pass on another core; the hash must equal src.Blake3 (upload.hashMismatch), or is
// taken as the upload's when empty.
//
// A source whose BLAKE3 and name are already finished in this store is not uploaded again: that
// upload is named again (and marked used). An unfinished upload of the same source (absolute path
// and name) that no other process holds is resumed: its data is read back and compared with the
// source's prefix, hashing as it goes, and only the rest is written; when they differ, or the
// source's size or BLAKE3 is no longer the one the partial was made for, the partial is cut to
// zero and written again under the same id. A partial held by another process is left to it and a
// new one made.
//
// ctx cancelled: stops after the current chunk, keeps the partial, returns ctx.Err(). A full disk
// is upload.diskFull and keeps what was written.
func (s calls) Stream(ctx context.Context, src store.Source, f store.SourceFile, opts store.StreamOptions) (*Meta, error) {
	opts = opts.WithDefaults(defaultChunk)
	return store.StreamUpload(ctx, s.localStore, src, f, opts)
}

// StreamHashFirst: a source whose name and size are those of a finished upload is hashed first,
// in one read: when it is that upload, nothing is copied (store.StreamBackend). Otherwise no
// finished upload has these bytes (just looked), and the copy reads the source once.
func (s *localStore) StreamHashFirst(_ context.Context, src store.Source) (bool, error) {
	return s.idx.MayHave(s, src.Name, src.Size), nil
}

// StartStream finds a finished upload of the same bytes and name, else the partial of the same
// source to resume, or makes one (store.StartCopy).
func (s *localStore) StartStream(ctx context.Context, st store.StreamStart) (store.StreamFound, store.StreamWrite, error) {
	return store.StartCopy(st, &s.idx, s, func(run store.PartialOf, size int64) (store.StreamWrite, error) {
		p, old, err := s.takePartial(run, size)
		if err != nil {
			return nil, err
		}
		pub := store.CopyPublish[*out]{B: s, Index: &s.idx, From: s, Batch: st.Opts.Batch}
		return &partialWrite{PartialStream: store.PartialStream[chunkData]{P: chunkData{p}, Old: old}, s: s, pub: pub, src: st.Src}, nil
	})
}

// Open opens the finished upload id named name through the guarded open, with its metadata
// (store.Backend, store.StreamBackend). A folder upload's folder is refused as every store
// refuses it (store.FolderAsFile), not as the guarded open refuses a folder.
func (s calls) Open(ctx context.Context, id, name string) (store.Reader, error) {
	f, err := s.openUploadFile(id, name)
	if fault.CodeOf(err) == fault.UploadUnreadable {
		if _, folder, ferr := store.FolderFilesOf(ctx, s.localStore, id); ferr == nil && folder {
			return nil, store.FolderAsFile(id, name)
		}
	}
	if err != nil {
		return nil, err
	}
	m, err := s.ReadMeta(id)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &localReader{File: f, info: m}, nil
}

// takePartial takes up the unfinished upload a run of run resumes, or makes one, for the source
// of size bytes (store.TakePartial over the index of partials by source); old is the source its
// data was written for (nil: new).
func (s *localStore) takePartial(run store.PartialOf, size int64) (*partial, *sourceKey, error) {
	return store.TakePartial(s, &s.parts, run, size)
}

// partialWrite is the write of an upload through a partial of its own.
type partialWrite struct {
	store.PartialStream[chunkData]
	s   *localStore
	pub store.CopyPublish[*out]
	src store.Source
}

// Data is the partial's data file as store.PartialStream reads it back (its size and truncate are
// the step-by-step upload's).
func (d chunkData) Data() (io.ReaderAt, func(error) error) {
	return d.f, func(err error) error { return storeErr(d.f.Name(), err) }
}

// Write appends the source to the partial's data from pos, in the pass of store.Pump (read and
// write here, hash on another core).
func (w *partialWrite) Write(ctx context.Context, src store.SourceFile, pos int64, pass store.StreamPass) (*Meta, error) {
	p := w.P
	fd := int(p.f.Fd())
	started := pos // the first byte whose writeback is not started yet
	err := store.Pump(ctx, src, pos, pass, nil, func(off int64, b []byte, done func()) error {
		defer done()
		if _, err := p.f.WriteAt(b, off); err != nil {
			p.truncate(off) // keep data a prefix that was written whole
			return storeErr(p.f.Name(), err)
		}
		if end := off + int64(len(b)); end-started >= writebackEvery {
			// Ask the kernel to start writing these bytes to disk now, without waiting, so the
			// disk works while we read and hash, and finish's fsync finds little left to do.
			startWriteback(fd, started, end-started)
			started = end
		}
		return nil
	})
	if err != nil && err == ctx.Err() {
		if err := fdatasync(fd); err != nil {
			return nil, storeErr(p.f.Name(), err)
		}
	}
	return nil, err
}

// Publish publishes the partial (in the batch: when it commits), or names an upload of the same
// bytes finished or claimed meanwhile instead (store.PublishCopy).
func (w *partialWrite) Publish(ctx context.Context, sum string) (*Meta, error) {
	return store.PublishCopy(ctx, w.pub, w, w.src.Name, w.src.Size, sum)
}

// DropCopy removes the partial: a copy of an upload that is finished, or claimed.
func (w *partialWrite) DropCopy() { w.P.remove(false) }

func (w *partialWrite) PublishOwn(sum string) (*Meta, error) { return w.P.publish(w.src.Size, sum) }

// BatchBuild builds the partial's finished folder for the batch (store.GroupBuilder), and starts
// writing its data to disk without waiting: the commit's fsync then finds it done.
func (w *partialWrite) BatchBuild(_, sum string) (*out, error) {
	o, err := w.P.buildOut(w.src.Size, sum)
	if err == nil {
		startWriteback(int(w.P.f.Fd()), 0, 0)
	}
	w.Batched = err == nil
	return o, err
}

// BatchUnbuild takes the folder built apart: the partial is an unfinished upload again.
func (w *partialWrite) BatchUnbuild(o *out, err error) {
	w.Batched = false
	o.undo(err)
}
