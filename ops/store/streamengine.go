package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/attachctl/attachctl/ops"
	"github.com/zeebo/blake3"
)

// The rules of the single-file upload (Streamer), written once over a StreamBackend: a backend's
// Stream method is StreamUpload called with itself, after what is its own (a batch of its own
// kind, its chunk sizes).
//
// What the engine decides: that the record's name is plain and its BLAKE3 64 hex digits; whether
// a source whose BLAKE3 the record does not give is hashed first; which finished upload is named
// again (the one the backend finds for the same BLAKE3 and name, only when it is still intact
// and can be marked used, else avoided: NameAgain), and that the same bytes and name another
// worker of the run's batch claimed are named as that upload (GroupBatch.Find); how much of an
// unfinished upload of the same source is kept (what it stored, compared with the source's
// prefix, kept whole or not at all; a source that is not the one it was made for starts over);
// the pass that reads the source once, in order, hashing it on another core (Pump); the hash
// check (upload.hashMismatch); the Resumed, Progress and Observe callbacks; a restart when
// another run took the upload over (ErrStreamLost). What is the backend's: finding what a source
// can take up (a source note, by the rules of Notes, or a partial folder), where each chunk of the
// pass goes (appended to a folder's data, a part on S3) with its own performance mechanics, and
// the create-only publish.

// StreamBackend is what a backend implements so that the rules of single-file uploads run over
// it (StreamUpload).
type StreamBackend interface {
	// StreamHashFirst reports whether a source whose BLAKE3 the record does not give is hashed
	// whole before anything is written: always for a backend whose resume is keyed on the BLAKE3
	// (S3's source note), or when a finished upload of this name and size may be there to name
	// again. It is asked only when src.Blake3 is "".
	StreamHashFirst(ctx context.Context, src Source) (bool, error)

	// StartStream finds what this upload of st.Src can take up: an upload of the same bytes and
	// name (found), else the unfinished upload of the same source that no one else holds, to
	// resume, else a new one (w). A finished upload whose id is st.Avoid (damaged, or no longer
	// usable) is not found again. st.Src.Blake3 is "" only when the source was not hashed first:
	// then nothing is looked for before the write.
	StartStream(ctx context.Context, st StreamStart) (found StreamFound, w StreamWrite, err error)

	// Open opens the finished upload id named name through the backend's guarded open
	// (Backend.Open), for the engine to read back whole before it names it again.
	Open(ctx context.Context, id, name string) (Reader, error)

	// MarkUsed is Backend.MarkUsed: the engine marks a finished upload used as it names it again
	// (docs/commands.md, upload), so that a sweep keeps the upload the user was just handed; one
	// it cannot mark (swept meanwhile) is not named, and the source is uploaded afresh.
	MarkUsed(ctx context.Context, ids []string, at time.Time) error
}

// StreamFound is an upload of the same bytes and name that StartStream found.
type StreamFound struct {
	ID string // "": none; else finished, checked intact by the engine before it is named again
}

// StreamStart is what StartStream is given.
type StreamStart struct {
	Src   Source
	Opts  StreamOptions // with the backend's defaults (Chunk, Progress)
	Avoid string        // a finished upload not to find again ("": none)
	Try   int           // how many times this upload started over after ErrStreamLost
}

// StreamStored is what an unfinished upload holds of an earlier run, as StreamWrite.Stored
// tells it.
type StreamStored struct {
	// Data holds N bytes an earlier run wrote, readable at any offset, for the engine to compare
	// with the source's prefix; nil when there are none, or when the backend checks what it holds
	// as it writes (S3: each part's MD5 against its ETag).
	Data io.ReaderAt
	N    int64
	// Err codes an error reading Data.
	Err func(error) error
	// Held is what the backend holds and checks itself as it writes (Data nil), so that a resume
	// is told.
	Held int64
	// Keyed: Size and Blake3 are the source the stored bytes were made for (Blake3 "": not known
	// then); a source of another size or BLAKE3 starts over.
	Keyed  bool
	Size   int64
	Blake3 string
}

// StreamPass is what the write is given besides the source: where each byte read goes.
type StreamPass struct {
	Size, Chunk int64
	Jobs        int
	// Hash is to be written every byte of the source from the write's offset on, in order (the
	// bytes before it the engine wrote while it compared them), and not after Write returns.
	Hash *blake3.Hasher
	// Observe is shown the same bytes in the same order (never nil).
	Observe func([]byte)
	// Progress is told the bytes got through, as they go.
	Progress func(int64)
	// Bufs is how many buffers Pump holds at most when it is given no pool (0: 4, enough for a
	// read, a write and the hash to go on at once).
	Bufs int
}

// StreamWrite is the resumable write of one unfinished upload.
type StreamWrite interface {
	// ID is the upload's id.
	ID() string
	// Stored is what the upload holds of an earlier run.
	Stored() (StreamStored, error)
	// Restart drops what the upload holds: the write starts from the first byte.
	Restart() error
	// Write writes the source f from offset from to its end, writing each byte read to pass.
	// ctx cancelled: it stops, keeps what was written for a resume, and returns ctx.Err(). A
	// non-nil Info ends the upload: another run finished it with these bytes meanwhile.
	Write(ctx context.Context, f SourceFile, from int64, pass StreamPass) (*Info, error)
	// Publish makes the upload finished, create-only, with its BLAKE3 sum (checked against the
	// record already), or names an upload of the same bytes and name finished meanwhile, one a
	// backend finds by its index only when it is still intact (NameAgain), as StartStream's is.
	// ErrStreamLost: another run of the same source owns the upload now; the backend dropped
	// this one and the engine starts over.
	Publish(ctx context.Context, sum string) (*Info, error)
	// Refuse is told that the source's bytes hash to got, not to the record's BLAKE3: what is
	// kept of the upload is the backend's choice.
	Refuse(ctx context.Context, got string)
	// Close releases the write; err is how the upload ended (nil: published).
	Close(err error)
}

// batchClaims is a Batch that knows the uploads it claimed (GroupBatch.Find).
type batchClaims interface {
	Find(blake3, name string) string
}

// ErrStreamLost is Publish's answer when another run of the same source took its upload over.
var ErrStreamLost = errors.New("another run of the same source owns its upload")

// StreamUpload is Streamer.Stream over b; opts carries b's defaults (WithDefaults).
func StreamUpload(ctx context.Context, b StreamBackend, src Source, f SourceFile, opts StreamOptions) (*Info, error) {
	leave, err := enterBatch(b, src, opts.Batch)
	if err != nil {
		return nil, err
	}
	defer leave()
	// What the record names, checked here for every backend, whoever calls.
	err = ValidName(src.Name)
	if err == nil {
		src.Blake3, err = CheckHex(src.Blake3)
	}
	if err != nil {
		return nil, err
	}
	observe := opts.Observe
	if src.Blake3 == "" {
		first, err := b.StreamHashFirst(ctx, src)
		if err != nil {
			return nil, err
		}
		if first {
			if src.Blake3, err = HashSource(ctx, f, src.Size, opts.Chunk, observe); err != nil {
				return nil, err
			}
			observe = nil // this pass showed the bytes; the write does not again
		}
	}
	if src.Blake3 != "" {
		// The same bytes and name claimed by another worker of this run's batch, built or being
		// built: named as they are, and the record's Settle waits for that upload's commit.
		if c, ok := opts.Batch.(batchClaims); ok {
			if id := c.Find(src.Blake3, src.Name); id != "" {
				opts.Progress(src.Size)
				return &Info{ID: id, Name: src.Name, Size: src.Size, Blake3: src.Blake3}, nil
			}
		}
	}
	st := StreamStart{Src: src, Opts: opts}
	for {
		found, w, err := b.StartStream(ctx, st)
		if err != nil {
			return nil, err
		}
		if found.ID != "" {
			// A finished upload is named again only when it is still these bytes: a corrupted one
			// is avoided, and the source uploaded afresh under a new id, which repairs it.
			if NameAgain(ctx, b, found.ID, src.Name, src.Blake3) {
				opts.Progress(src.Size)
				return &Info{ID: found.ID, Name: src.Name, Size: src.Size, Blake3: src.Blake3}, nil
			}
			st.Avoid = found.ID
			continue
		}
		info, err := streamWrite(ctx, w, &st, f, observe)
		w.Close(err)
		if err == ErrStreamLost {
			opts.Progress(-src.Size)
			st.Try++
			continue
		}
		return info, err
	}
}

// streamHashers recycles the hashers of the writes: one is some 10 KiB, dear to make anew for
// each of many small files.
var streamHashers = sync.Pool{New: func() any { return blake3.New() }}

// streamWrite keeps what w holds of an earlier run as far as it equals the source, writes the
// rest, checks the BLAKE3 and publishes.
func streamWrite(ctx context.Context, w StreamWrite, st *StreamStart, f SourceFile, observe func([]byte)) (*Info, error) {
	src, opts := st.Src, st.Opts
	if observe == nil {
		observe = func([]byte) {}
	}
	h := streamHashers.Get().(*blake3.Hasher)
	h.Reset()
	defer streamHashers.Put(h)
	stored, err := w.Stored()
	if err != nil {
		return nil, err
	}
	var from int64
	if stored.Data != nil && stored.N > 0 {
		// Not the source these bytes were made for: nothing of them is compared.
		other := stored.N > src.Size || stored.Keyed && (stored.Size != src.Size ||
			stored.Blake3 != "" && src.Blake3 != "" && stored.Blake3 != src.Blake3)
		if !other {
			storeErr := stored.Err
			if storeErr == nil {
				storeErr = func(err error) error { return err }
			}
			if from, err = KeepPrefix(ctx, f, stored.Data, stored.N, opts.Chunk, h, observe, opts.Progress, opts.Resumed, storeErr); err != nil {
				return nil, err
			}
		}
		if from < stored.N {
			if err := w.Restart(); err != nil {
				return nil, err
			}
		}
	} else if stored.Held > 0 && opts.Resumed != nil {
		opts.Resumed(stored.Held)
	}
	pass := StreamPass{Size: src.Size, Chunk: opts.Chunk, Jobs: max(opts.Jobs, 1), Hash: h, Observe: observe, Progress: opts.Progress}
	if info, err := w.Write(ctx, f, from, pass); info != nil || err != nil {
		return info, err
	}
	if err := f.Unchanged(); err != nil {
		return nil, err
	}
	got := hex.EncodeToString(h.Sum(nil))
	if src.Blake3 != "" && got != src.Blake3 {
		// The file changed since it was hashed: what was written is not what the record names.
		w.Refuse(ctx, got)
		return nil, HashMismatch(src.Path, got, src.Blake3)
	}
	return w.Publish(ctx, got)
}

// Pump is the write pass of a source, the same on every backend: it reads f from offset from to
// pass.Size in chunks of at most pass.Chunk bytes and hands each to put, in order, on this
// goroutine, while another goroutine writes the same bytes in the same order to pass.Hash and
// pass.Observe (two cores share the pass); pass.Progress is told each chunk put. It stops at the
// first error of a read or of put, or when ctx is done (ctx.Err()), once what was read is hashed.
//
// At most cap(free) buffers are in use, so that memory stays bounded (an entry shorter than a
// chunk is made anew); free nil: a few of sourceBufs, no larger than the source, so that a small
// file costs little. A buffer goes back once hashed and given back by put's done (once, whether
// or not put fails): put may leave that to a goroutine of its own (S3 sends a part on a worker),
// whose end its caller waits for, with a free of its own.
func Pump(ctx context.Context, f SourceFile, from int64, pass StreamPass, free chan []byte, put func(off int64, b []byte, done func()) error) error {
	size, chunk := pass.Size, pass.Chunk
	if size <= from {
		return nil
	}
	want := min(chunk, size-from) // the largest chunk this pass reads
	if free == nil {
		n := int(min(int64(cmp.Or(pass.Bufs, 4)), (size-from)/chunk+1))
		free = make(chan []byte, n)
		for range n {
			if b, _ := sourceBufs.Get().(*[]byte); b != nil {
				free <- *b
			} else {
				free <- nil
			}
		}
		defer func() {
			for len(free) > 0 {
				if b := <-free; b != nil {
					sourceBufs.Put(&b)
				}
			}
		}()
	}
	type held struct {
		b    []byte
		refs atomic.Int32
	}
	release := func(h *held) {
		if h.refs.Add(-1) == 0 {
			free <- h.b[:cap(h.b)]
		}
	}
	hashing := make(chan *held, cap(free))
	hashed := make(chan struct{})
	go func() {
		defer close(hashed)
		for h := range hashing {
			pass.Hash.Write(h.b)
			pass.Observe(h.b)
			release(h)
		}
	}()
	defer func() { close(hashing); <-hashed }()
	for pos := from; pos < size; {
		if err := ctx.Err(); err != nil {
			return err
		}
		var b []byte
		select {
		case b = <-free:
		case <-ctx.Done():
			return ctx.Err()
		}
		k := min(chunk, size-pos)
		if int64(cap(b)) < k {
			b = make([]byte, want)
		}
		b = b[:k]
		if err := ReadSource(f, b, pos); err != nil {
			free <- b
			return err
		}
		h := &held{b: b}
		h.refs.Store(2)
		hashing <- h
		if err := put(pos, b, func() { release(h) }); err != nil {
			return err
		}
		pos += k
		pass.Progress(k)
	}
	return nil
}

// SourceKey is what an upload of a source is found again by, as hex: the name it is uploaded
// under, its size and its BLAKE3, and not its path, so that the same bytes under the same name
// find the same upload from any path. A backend that keeps a note of which upload a source is
// (S3, by the rules of Notes) names the note by it; what was written under it stays findable, so
// it never changes. (A note an older version keyed on the path as well is not found by it.)
func SourceKey(name string, size int64, blake3 string) string {
	h := sha256.New()
	for _, f := range []string{name, blake3} {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	h.Write(strconv.AppendInt(nil, size, 10))
	return hex.EncodeToString(h.Sum(nil))
}

// NameAgain reports whether the finished upload id of b is named again as the bytes of BLAKE3
// want under name: it still holds them (its metadata says so, and its bytes, read back whole
// through the guarded open, are its size and hash to want: a corrupted upload is never named
// again), and b marked it used now (MarkUsed).
func NameAgain(ctx context.Context, b StreamBackend, id, name, want string) bool {
	r, err := b.Open(ctx, id, name)
	if err != nil {
		return false
	}
	defer r.Close()
	m := r.Info()
	if m == nil || m.Blake3 != want || m.Name != name {
		return false
	}
	got, n, err := ops.Hash(r, nil)
	return err == nil && n == m.Size && got == want && b.MarkUsed(ctx, []string{id}, time.Now()) == nil
}
