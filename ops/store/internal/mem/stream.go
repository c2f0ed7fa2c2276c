package mem

import (
	"bytes"
	"context"
	"encoding/hex"
	"sync"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/zeebo/blake3"
)

// Stream puts a whole source file into the store (store.Streamer), as the S3 store does: the
// BLAKE3 is known first (a source without one is read once for it), the source's note names the
// upload, a finished upload of the same source that is still intact is named again, and an
// unfinished one no writer holds is resumed, keeping the whole chunks that still equal the
// source.
func (s *Store) Stream(ctx context.Context, src store.Source, f store.SourceFile, opts store.StreamOptions) (*store.Info, error) {
	if err := store.ValidName(src.Name); err != nil {
		return nil, err
	}
	want, err := store.CheckHex(src.Blake3)
	if err != nil {
		return nil, err
	}
	var b *batch
	if opts.Batch != nil {
		var ok bool
		if b, ok = opts.Batch.(*batch); !ok || b.s != s {
			return nil, fault.Errorf(fault.UploadInvalid, "%s: the batch given is not one of store %s", src.Path, s.loc)
		}
	}
	opts = opts.WithDefaults(DefaultChunk)
	chunk, progress, observe, size := opts.Chunk, opts.Progress, opts.Observe, src.Size
	if want == "" {
		if want, err = store.HashSource(ctx, f, size, chunk, observe); err != nil {
			return nil, err
		}
		observe = nil // this pass showed the bytes; the send does not again
	}
	note := noteKey("file", src.Path, src.Name, size, want)

	id, fin, p, err := s.byNote(note, false)
	if err != nil {
		return nil, err
	}
	if fin != nil && fin.info.Name == src.Name && fin.info.Blake3 == want && hexSum(fin.data) == want {
		s.unhold(p)
		progress(size)
		info := fin.info
		return &info, nil
	}
	if p == nil {
		var release func()
		if id, p, release, err = s.beginStaged(ctx, note, src.Name, size, false); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil && fault.CodeOf(err) != "" {
				release()
			}
		}()
	}
	held := true
	defer func() {
		if held {
			s.unhold(p)
		}
	}()

	// What is kept of an earlier run: what it stored, as far as it equals the source.
	s.mu.Lock()
	old := p.data
	s.mu.Unlock()
	h := blake3.New()
	if observe == nil {
		observe = func([]byte) {}
	}
	kept, err := store.KeepPrefix(ctx, f, bytes.NewReader(old), min(int64(len(old)), size), chunk, h, observe, progress, opts.Resumed, func(err error) error { return err })
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	p.data = p.data[:kept:kept]
	s.mu.Unlock()
	buf := make([]byte, min(chunk, max(size-kept, 1)))
	for off := kept; off < size; {
		if err = ctx.Err(); err != nil {
			return nil, err
		}
		n := min(int64(len(buf)), size-off)
		if err = store.ReadSource(f, buf[:n], off); err != nil {
			return nil, err
		}
		h.Write(buf[:n])
		observe(buf[:n])
		s.mu.Lock()
		p.data = append(p.data, buf[:n]...)
		p.written = s.now()
		s.mu.Unlock()
		off += n
		progress(n)
	}
	if err = f.Unchanged(); err != nil {
		return nil, err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		// What was sent is not what the record names: nothing of it is kept.
		s.mu.Lock()
		s.drop(id, p)
		s.mu.Unlock()
		err = store.HashMismatch(src.Path, got, want)
		return nil, err
	}
	info := store.Info{ID: id, Name: src.Name, Size: size, Blake3: want}
	if b != nil {
		held = false // the batch holds it until it is published
		b.add(id, p, want)
		return &info, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	info = s.publish(id, p, want)
	return &info, nil
}

// NewBatch is a group of uploads published together (store.Batcher).
func (s *Store) NewBatch(ctx context.Context) (store.Batch, error) {
	return &batch{s: s, pending: map[string]pending{}, errs: map[string]error{}}, nil
}

type batch struct {
	s       *Store
	mu      sync.Mutex
	pending map[string]pending
	order   []string
	errs    map[string]error
}

type pending struct {
	p   *partial
	sum string
}

func (b *batch) add(id string, p *partial, sum string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending[id] = pending{p, sum}
	b.order = append(b.order, id)
}

// Settle commits the batch when it holds id, and returns id's error.
func (b *batch) Settle(id string) error {
	b.mu.Lock()
	_, held := b.pending[id]
	b.mu.Unlock()
	if held {
		b.Commit()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.errs[id]
}

// SetMore and Wake are store.Batch's: this batch commits at the first Settle, never waiting.
func (b *batch) SetMore(func() bool) {}
func (b *batch) Wake()               {}

// Commit publishes every upload the batch holds.
func (b *batch) Commit() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.s
	var first error
	for _, id := range b.order {
		up, ok := b.pending[id]
		if !ok {
			continue
		}
		delete(b.pending, id)
		s.mu.Lock()
		up.p.holds--
		if s.partials[id] != up.p {
			b.errs[id] = fault.Errorf(fault.UploadMissing, "upload %s: removed before its batch was committed", id)
		} else {
			s.publish(id, up.p, up.sum)
		}
		s.mu.Unlock()
		if first == nil {
			first = b.errs[id]
		}
	}
	b.order = nil
	return first
}

// byNote looks up the upload the source's note names (folder: a folder upload's note): the
// finished one, or the unfinished one, which this run then holds (unhold releases it) unless
// another writer does.
func (s *Store) byNote(note string, folder bool) (id string, fin *finished, p *partial, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkStore(true); err != nil {
		return "", nil, nil, err
	}
	id = s.notes[note]
	if f := s.finished[id]; f != nil && f.folder() == folder {
		fin = f
	}
	if q := s.partials[id]; q != nil && q.holds == 0 && q.folder == folder {
		p = q
		p.holds++
	}
	return id, fin, p, nil
}

// beginStaged begins a new unfinished upload for the upload stage, named by the source's note,
// admitted against the store's limits and held by this run; release drops its reservation.
func (s *Store) beginStaged(ctx context.Context, note, name string, size int64, folder bool) (string, *partial, func(), error) {
	id, release, err := s.quota.AdmitNew(ctx, name, size)
	if err != nil {
		return "", nil, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	p := &partial{name: name, size: size, made: now, written: now, note: note, folder: folder, holds: 1}
	if folder {
		p.files = map[string][]byte{}
	}
	s.partials[id] = p
	s.notes[note] = id
	return id, p, release, nil
}

// unhold releases this run's hold of p (nil: none).
func (s *Store) unhold(p *partial) {
	if p == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p.holds--
}
