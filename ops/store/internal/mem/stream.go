package mem

import (
	"bytes"
	"context"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// Stream puts a whole source file into the store (store.Streamer) by the rules of
// store.StreamUpload: the BLAKE3 is known first (a source without one is read once for it), a
// finished upload of the same BLAKE3 and name that is still intact is named again (found as the
// local store finds it), and the unfinished one the source's note names, when no writer holds
// it, is resumed (as the S3 store's notes do). A small source in a batch is built whole for the
// batch's commit (store.SmallWrite), as the local store builds it.
func (s *Store) Stream(ctx context.Context, src store.Source, f store.SourceFile, opts store.StreamOptions) (*store.Info, error) {
	return store.StreamUpload(ctx, s, src, f, opts.WithDefaults(DefaultChunk))
}

// StreamHashFirst is always: the source's note is keyed on its BLAKE3 (store.StreamBackend).
func (s *Store) StreamHashFirst(context.Context, store.Source) (bool, error) { return true, nil }

// StartStream finds a finished upload of the source's BLAKE3 and name, else takes up the
// unfinished one the source's note names that no writer holds, or begins a new one
// (store.StreamBackend).
func (s *Store) StartStream(ctx context.Context, st store.StreamStart) (store.StreamFound, store.StreamWrite, error) {
	src := st.Src
	note := store.SourceKey(src.Name, src.Size, src.Blake3)
	found, id, p, err := s.byNote(note, src.Blake3, src.Name, st.Avoid, false)
	if err != nil || found != "" {
		return store.StreamFound{ID: found}, nil, err
	}
	if w := store.SmallWrite(src, st.Opts); w != nil {
		s.unhold(p) // a small source in a batch is built whole, not resumed
		return store.StreamFound{}, w, nil
	}
	w := &streamWrite{s: s, id: id, p: p, release: func() {}}
	if p == nil {
		if w.id, w.p, w.release, err = s.beginStaged(ctx, note, src.Name, src.Size, false); err != nil {
			return store.StreamFound{}, nil, err
		}
	}
	w.pub = store.CopyPublish[*batched]{B: s, Index: &s.idx, Batch: st.Opts.Batch}
	return store.StreamFound{}, w, nil
}

// streamWrite is the write of one unfinished upload, held by this run.
type streamWrite struct {
	s       *Store
	id      string
	p       *partial
	pub     store.CopyPublish[*batched]
	release func() // drops the reservation of a new upload
	batched bool   // the batch holds it until it is published
}

func (w *streamWrite) ID() string { return w.id }

func (w *streamWrite) Stored() (store.StreamStored, error) {
	w.s.mu.Lock()
	old := w.p.data
	w.s.mu.Unlock()
	return store.StreamStored{Data: bytes.NewReader(old), N: int64(len(old))}, nil
}

func (w *streamWrite) Restart() error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	w.p.data = w.p.data[:0:0]
	return nil
}

func (w *streamWrite) Write(ctx context.Context, f store.SourceFile, from int64, pass store.StreamPass) (*store.Info, error) {
	s, p := w.s, w.p
	s.mu.Lock()
	p.data = p.data[:from:from]
	s.mu.Unlock()
	return nil, store.Pump(ctx, f, from, pass, nil, func(_ int64, b []byte, done func()) error {
		defer done()
		s.mu.Lock()
		defer s.mu.Unlock()
		p.data = append(p.data, b...)
		p.written = s.now()
		return nil
	})
}

// Refuse drops the upload: what was sent is not what the record names, and nothing of it is
// kept.
func (w *streamWrite) Refuse(context.Context, string) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	w.s.drop(w.id, w.p)
}

// Publish makes the upload finished (in the batch: when it commits), or names an upload of the
// same bytes finished or claimed meanwhile instead, as the local store does (store.PublishCopy):
// two workers uploading the same bytes make one upload.
func (w *streamWrite) Publish(ctx context.Context, sum string) (*store.Info, error) {
	return store.PublishCopy(ctx, w.pub, w, w.p.name, w.size(), sum)
}

func (w *streamWrite) size() int64 {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return int64(len(w.p.data))
}

// DropCopy drops the upload: another of the same bytes is named.
func (w *streamWrite) DropCopy() {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	w.s.drop(w.id, w.p)
}

// PublishOwn asks the index again with the store's lock held, so that of two workers that both
// found nothing the second publishes after the first and finds it (store.ErrCopyFound).
func (w *streamWrite) PublishOwn(sum string) (*store.Info, error) {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idx.Find(nil, sum, w.p.name, "") != "" {
		return nil, store.ErrCopyFound
	}
	info := s.publish(w.id, w.p, sum)
	return &info, nil
}

// BatchBuild holds the upload for the batch's commit; BatchUnbuild (never called: BatchJoin keeps
// none out) lets it go.
func (w *streamWrite) BatchBuild(id, sum string) (*batched, error) {
	w.batched = true
	return &batched{id: id, p: w.p, sum: sum}, nil
}

func (w *streamWrite) BatchUnbuild(*batched, error) { w.batched = false }

func (w *streamWrite) Close(err error) {
	if err != nil && fault.CodeOf(err) != "" {
		w.release()
	}
	if !w.batched {
		w.s.unhold(w.p)
	}
}

// byNote finds a finished upload of blake3 and name other than avoid (found), as the local store
// does (store.FinishedIndex, told of each upload as it is published), else the upload the source's note names (folder: a folder upload's
// note) and the unfinished one it is, which this run then holds (unhold releases it) unless
// another writer does.
func (s *Store) byNote(note, blake3, name, avoid string, folder bool) (found, id string, p *partial, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkStore(true); err != nil {
		return "", "", nil, err
	}
	if found = s.idx.Find(nil, blake3, name, avoid); found != "" {
		return found, "", nil, nil
	}
	id = s.notes[note]
	if q := s.partials[id]; q != nil && q.holds == 0 && q.folder == folder {
		p = q
		p.holds++
	}
	return "", id, p, nil
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
	// An unfinished upload the note names is another worker's at work on the same source: it
	// keeps the note, and this one takes it only when it is published first (Publish).
	if s.partials[s.notes[note]] == nil {
		s.notes[note] = id
	}
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
