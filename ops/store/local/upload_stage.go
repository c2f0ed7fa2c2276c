//go:build unix

package local

import (
	"context"
	"encoding/hex"
	"sync"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/zeebo/blake3"
)

// fsync policy of the stage: writeback of every writebackEvery bytes written is started at once
// (sync_file_range, no wait), data is fdatasynced when the run is interrupted and fsynced at
// finish. A killed process loses nothing that reached write(2) (the page cache keeps it); a crash
// of the machine loses at most what the disk had not taken yet (the started writeback, or the
// kernel's dirty expiry, 30 s by default), and the resume compares what is there with the source
// anyway. Measured on a 2 GiB upload: periodic fdatasyncs were 10-40% slower, and leaving all
// writeback to finish's fsync (as cp then sync does) about 15% slower, than this.
const writebackEvery = 8 << 20

// Stream is the local store's upload of a whole source (store.Streamer). The source is read
// once, in chunks of at most opts.Chunk bytes, and hashed in the same pass on another core; the
// hash must equal src.Blake3 (upload.hashMismatch), or is taken as the upload's when empty.
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
func (s *localStore) Stream(ctx context.Context, src store.Source, f store.SourceFile, opts store.StreamOptions) (*Meta, error) {
	chunk := opts.Chunk
	if chunk <= 0 {
		chunk = defaultChunk
	}
	progress := opts.Progress
	if progress == nil {
		progress = func(int64) {}
	}
	var batch *groupBatch
	if opts.Batch != nil {
		b, ok := opts.Batch.(*groupBatch)
		if !ok || b.s != s {
			return nil, fault.Errorf(fault.UploadInvalid, "store %s: a batch of another store", s.Dir)
		}
		batch = b
		batch.enter()
		defer batch.leave()
	}
	abs, name, size, want := src.Path, src.Name, src.Size, src.Blake3
	done := func(id, sum string) (*Meta, error) {
		return &Meta{ID: id, Name: name, Size: size, Blake3: sum}, nil
	}
	// Without a BLAKE3 (sniff --no-hash, or `upload FILE`), a source whose name and size are
	// those of a finished upload is hashed first, in one read: when it is that upload, nothing is
	// copied. Otherwise the copy below reads it again.
	// none: no finished upload has this name and size (just looked), so none has these bytes.
	none := want == "" && !s.mayHave(name, size)
	if want == "" && !none {
		sum, err := store.HashSource(ctx, f, size, chunk, opts.Observe)
		if err != nil {
			return nil, err
		}
		if id := s.finished(sum, name); id != "" && s.reuse(id) {
			progress(size)
			return done(id, sum)
		}
		if opts.Observe != nil {
			opts.Observe(nil) // the copy shows every byte again
		}
	}
	// An upload of the same bytes and name, finished or (in the batch) claimed, is named again;
	// a finished one is marked used, so that a sweep keeps the upload the record now names.
	if want != "" {
		id := s.finished(want, name)
		if id != "" && !s.reuse(id) {
			id = ""
		}
		if id == "" && batch != nil {
			id = batch.find(want, name)
		}
		if id != "" {
			progress(size)
			return done(id, want)
		}
	}
	if batch != nil && small(size, chunk) {
		return s.streamSmall(ctx, batch, src, f, opts, progress, none)
	}
	p, err := s.stagePartial(abs, name, size, want)
	if err != nil {
		return nil, err
	}
	batched := false
	defer func() {
		if !batched {
			p.close()
		}
	}()
	sum, err := p.copyFrom(ctx, f, size, chunk, progress, opts.Observe, opts.Resumed)
	if err != nil {
		return nil, err
	}
	if want != "" && sum != want {
		p.meta.Source.Blake3 = sum // what the partial holds, for a run with a fresh manifest
		p.writeMeta()
		return nil, store.HashMismatch(abs, sum, want)
	}
	// Finished meanwhile by another run, or claimed in the batch by a worker that copied the same
	// file at the same time: name that one and drop this copy.
	id := s.finished(sum, name)
	if id != "" && !s.reuse(id) {
		id = ""
	}
	if id == "" && batch != nil {
		id = batch.claim(sum, name, p.id)
	}
	if id != "" && id != p.id {
		p.remove(false) // a copy of an upload that is finished: nothing to keep
		return done(id, sum)
	}
	if batch != nil {
		o, err := p.buildOut(size, sum)
		if err != nil {
			batch.drop(sum, name, p.id, err)
			return nil, err
		}
		if err := batch.add(o); err != nil {
			o.undo(err)
			batch.drop(sum, name, p.id, err)
			return nil, err
		}
		batched = true
		return done(p.id, sum)
	}
	return p.publish(size, sum)
}

// reuse marks the finished upload id used now, as a record is about to name it again; false
// when it cannot be marked (swept meanwhile): then the file is uploaded anew.
func (s *localStore) reuse(id string) bool {
	return s.MarkUsed([]string{id}, time.Now()) == nil
}

// stagePartial finds the unfinished upload of this source that no one else holds, ready to
// resume, or makes one.
func (s *localStore) stagePartial(abs, name string, size int64, want string) (*partial, error) {
	ids, err := s.partialsOf(abs, name)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		meta, err := s.readPartialMetaOf(id)
		if err != nil || meta.Source == nil || meta.Source.Path != abs || meta.Name != name {
			continue
		}
		p, err := s.lockPartial(id, true)
		if err != nil {
			continue // held by another process, or gone
		}
		src := p.meta.Source
		if src == nil || src.Path != abs || p.meta.Name != name {
			p.close()
			continue
		}
		cur, err := p.size()
		if err != nil {
			p.close()
			return nil, err
		}
		keyOK := src.Size == size && (src.Blake3 == "" || want == "" || src.Blake3 == want) && cur <= size
		if !keyOK && cur > 0 { // the source is not the one this partial holds: start over
			if err := p.truncate(0); err != nil {
				p.close()
				return nil, err
			}
		}
		if key := (sourceKey{Path: abs, Blake3: want, Size: size}); *src != key || p.meta.Size != size {
			p.meta.Size, p.meta.Source = size, &key
			if err := p.writeMeta(); err != nil {
				p.close()
				return nil, err
			}
		}
		return p, nil
	}
	p, err := s.newPartial(name, size, &sourceKey{Path: abs, Blake3: want, Size: size})
	if err == nil {
		s.notePartial(abs, name, p.id)
	}
	return p, err
}

// copyFrom makes the locked partial's data equal to the source, whose size and mtime at open are
// st's: it compares what data holds with the source's prefix (reading both, hashing the source),
// cuts data to zero if they differ, then appends the rest. It returns the source's BLAKE3.
// resumed, when not nil, is told the offset the copy goes on from when data held a prefix of
// the source.
func (p *partial) copyFrom(ctx context.Context, src store.SourceFile, size, chunk int64, progress func(int64), observe func([]byte), resumed func(int64)) (string, error) {
	h := blake3.New()
	if observe == nil {
		observe = func([]byte) {}
	}
	cur, err := p.size()
	if err != nil {
		return "", err
	}
	var pos int64
	if cur > size {
		if err := p.truncate(0); err != nil {
			return "", err
		}
		cur = 0
	}
	if pos, err = store.KeepPrefix(ctx, src, p.f, cur, chunk, h, observe, progress, resumed,
		func(err error) error { return storeErr(p.f.Name(), err) }); err != nil {
		return "", err
	}
	if pos < cur {
		if err := p.truncate(0); err != nil {
			return "", err
		}
	}
	// The writes: read and write here, hash on another goroutine (the hasher), so that two cores
	// share the pass. The buffers go round: read into, write from, hash, free again.
	// Buffers no larger than what is left, so that small files cost little.
	hp := newHashPipe(h, observe, min(chunk, max(size-pos, 1)), int(min(4, (size-pos)/chunk+1)))
	defer hp.close()
	started := pos // the first byte whose writeback is not started yet
	for pos < size {
		if ctx.Err() != nil {
			if err := fdatasync(int(p.f.Fd())); err != nil {
				return "", storeErr(p.f.Name(), err)
			}
			return "", ctx.Err()
		}
		n := min(chunk, size-pos)
		b := hp.get()[:n]
		if err := store.ReadSource(src, b, pos); err != nil {
			return "", err
		}
		if _, err := p.f.WriteAt(b, pos); err != nil {
			p.f.Truncate(pos) // keep data a prefix that was written whole
			fdatasync(int(p.f.Fd()))
			return "", storeErr(p.f.Name(), err)
		}
		hp.put(b)
		pos += n
		progress(n)
		if pos-started >= writebackEvery {
			// Ask the kernel to start writing these bytes to disk now, without waiting, so the
			// disk works while we read and hash, and finish's fsync finds little left to do.
			startWriteback(int(p.f.Fd()), started, pos-started)
			started = pos
		}
	}
	hp.close()
	if err := src.Unchanged(); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashPipe hashes buffers on its own goroutine, in the order they are put, and hands them back.
type hashPipe struct {
	in     chan []byte
	free   chan []byte
	done   chan struct{}
	closed bool
}

// chunkPool recycles the pipe's buffers from one file to the next: a fresh buffer per file costs a
// first touch of every page, which on a VM is dearer than the copy itself.
var chunkPool sync.Pool

func newHashPipe(h *blake3.Hasher, observe func([]byte), size int64, bufs int) *hashPipe {
	hp := &hashPipe{in: make(chan []byte, bufs), free: make(chan []byte, bufs), done: make(chan struct{})}
	for range bufs {
		b, _ := chunkPool.Get().(*[]byte)
		if b == nil || int64(cap(*b)) < size {
			nb := make([]byte, size)
			b = &nb
		}
		hp.free <- (*b)[:size]
	}
	go func() {
		defer close(hp.done)
		for b := range hp.in {
			h.Write(b)
			observe(b)
			hp.free <- b[:cap(b)]
		}
	}()
	return hp
}

// get returns a free buffer; put queues a filled one for hashing.
func (hp *hashPipe) get() []byte  { return <-hp.free }
func (hp *hashPipe) put(b []byte) { hp.in <- b }

// close waits until everything put has been hashed, and gives the free buffers back to the pool.
// It may be called again.
func (hp *hashPipe) close() {
	if !hp.closed {
		hp.closed = true
		close(hp.in)
		<-hp.done
		for len(hp.free) > 0 {
			b := <-hp.free
			chunkPool.Put(&b)
		}
	}
}
