package store

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/zeebo/blake3"
)

// memStreams is the smallest StreamBackend: uploads kept in maps. It tests the engine's rules
// (naming a finished upload again only when intact, the resume and how much of it is kept, the
// start over, the hash check, the restart after ErrStreamLost, the callbacks) apart from any
// backend.
type memStreams struct {
	hashFirst bool
	finished  map[string]memFinished // by id
	partial   map[string]*memStream  // by source path
	batch     Batch                  // given to the stream (StreamOptions.Batch)
	next      int
	noReuse   bool // MarkUsed refuses
	lose      int  // Publish answers ErrStreamLost this many times
	held      int64
	starts    []StreamStart
	reused    []string
}

type memFinished struct {
	info Info
	data []byte
}

func newMemStreams() *memStreams {
	return &memStreams{finished: map[string]memFinished{}, partial: map[string]*memStream{}}
}

func (m *memStreams) newID() string {
	m.next++
	return fmt.Sprintf("0190c4d2-0000-7000-8000-%012d", m.next)
}

func (m *memStreams) StreamHashFirst(context.Context, Source) (bool, error) { return m.hashFirst, nil }

func (m *memStreams) StartStream(_ context.Context, st StreamStart) (StreamFound, StreamWrite, error) {
	m.starts = append(m.starts, st)
	if st.Src.Blake3 != "" {
		for id, f := range m.finished {
			if f.info.Blake3 == st.Src.Blake3 && f.info.Name == st.Src.Name && id != st.Avoid {
				return StreamFound{ID: id}, nil, nil
			}
		}
	}
	w := m.partial[st.Src.Path]
	if w == nil {
		w = &memStream{m: m, id: m.newID(), path: st.Src.Path, name: st.Src.Name, size: st.Src.Size, sum: st.Src.Blake3, held: m.held}
		m.partial[st.Src.Path] = w
	}
	return StreamFound{}, w, nil
}

func (m *memStreams) Open(_ context.Context, id, name string) (Reader, error) {
	f, ok := m.finished[id]
	if !ok || f.info.Name != name {
		return nil, fault.Errorf(fault.UploadMissing, "upload %s: not there", id)
	}
	info := f.info
	return memReader{bytes.NewReader(f.data), &info}, nil
}

type memReader struct {
	*bytes.Reader
	info *Info
}

func (r memReader) Info() *Info  { return r.info }
func (r memReader) Close() error { return nil }

func (m *memStreams) MarkUsed(_ context.Context, ids []string, _ time.Time) error {
	m.reused = append(m.reused, ids...)
	if m.noReuse {
		return fault.Errorf(fault.UploadMissing, "upload %s: swept", ids[0])
	}
	return nil
}

// memStream is an unfinished upload: its data, and the source it was written for.
type memStream struct {
	m          *memStreams
	id         string
	path, name string
	size       int64
	sum        string
	data       []byte
	held       int64
	from       []int64 // the offset of each Write
	restarts   int
	refused    string
	closed     int
}

func (w *memStream) ID() string { return w.id }
func (w *memStream) Stored() (StreamStored, error) {
	if w.held > 0 {
		return StreamStored{Held: w.held}, nil
	}
	return StreamStored{Data: bytes.NewReader(w.data), N: int64(len(w.data)), Keyed: true, Size: w.size, Blake3: w.sum}, nil
}
func (w *memStream) Restart() error { w.restarts++; w.data = nil; return nil }
func (w *memStream) Write(ctx context.Context, f SourceFile, from int64, pass StreamPass) (*Info, error) {
	w.from = append(w.from, from)
	if int64(len(w.data)) != from { // an append-only write, as a file's
		return nil, fmt.Errorf("write from %d, but %d bytes are stored", from, len(w.data))
	}
	buf := make([]byte, pass.Chunk)
	for off := from; off < pass.Size; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := min(pass.Chunk, pass.Size-off)
		if err := ReadSource(f, buf[:n], off); err != nil {
			return nil, err
		}
		pass.Hash.Write(buf[:n])
		pass.Observe(buf[:n])
		w.data = append(w.data, buf[:n]...)
		off += n
		pass.Progress(n)
	}
	return nil, nil
}
func (w *memStream) Refuse(_ context.Context, got string) { w.refused = got }
func (w *memStream) Publish(_ context.Context, sum string) (*Info, error) {
	if w.m.lose > 0 {
		w.m.lose--
		delete(w.m.partial, w.path)
		return nil, ErrStreamLost
	}
	info := Info{ID: w.id, Name: w.name, Size: int64(len(w.data)), Blake3: sum}
	w.m.finished[w.id] = memFinished{info, w.data}
	delete(w.m.partial, w.path)
	return &info, nil
}
func (w *memStream) Close(error) { w.closed++ }

// memStreamSource is a SourceFile in memory; changed makes Unchanged refuse it.
type memStreamSource struct {
	*bytes.Reader
	changed bool
}

func (s *memStreamSource) Name() string { return "/src/a.bin" }
func (s *memStreamSource) Unchanged() error {
	if s.changed {
		return fault.Errorf(fault.UploadSourceChange, "moved")
	}
	return nil
}

func sum3(b []byte) string {
	h := blake3.Sum256(b)
	return hex.EncodeToString(h[:])
}

func TestStreamUpload(t *testing.T) {
	content := bytes.Repeat([]byte("0123456789abcdef"), 64) // 1 KiB: 8 chunks of 128
	want := sum3(content)
	other := append([]byte("X"), content[1:]...)
	const chunk = 128
	size := int64(len(content))

	cases := []struct {
		name  string
		blake string // the record's
		setup func(m *memStreams)
		src   *memStreamSource
		ctx   func() context.Context
		check func(t *testing.T, m *memStreams, r streamResult)
	}{
		{"new upload, BLAKE3 known", want, nil, nil, nil, func(t *testing.T, m *memStreams, r streamResult) {
			mustInfo(t, r, want)
			if f := m.finished[r.info.ID]; !bytes.Equal(f.data, content) {
				t.Fatal("the finished upload is not the source")
			}
			if r.progress != size || len(r.resumed) != 0 || !bytes.Equal(r.observed, content) {
				t.Fatalf("progress %d, resumed %v, observed %d bytes", r.progress, r.resumed, len(r.observed))
			}
		}},
		{"no BLAKE3, not hashed first: one pass, looked up by nothing", "", nil, nil, nil, func(t *testing.T, m *memStreams, r streamResult) {
			mustInfo(t, r, want)
			if len(m.starts) != 1 || m.starts[0].Src.Blake3 != "" {
				t.Fatalf("starts %+v: a source not hashed first is started without a BLAKE3", m.starts)
			}
		}},
		{"no BLAKE3, hashed first: keyed on it, Observe sees the bytes once", "", func(m *memStreams) { m.hashFirst = true }, nil, nil, func(t *testing.T, m *memStreams, r streamResult) {
			mustInfo(t, r, want)
			if m.starts[0].Src.Blake3 != want || !bytes.Equal(r.observed, content) {
				t.Fatalf("started with %q, observed %d bytes", m.starts[0].Src.Blake3, len(r.observed))
			}
		}},
		{"finished and intact: named again, nothing written", want, func(m *memStreams) {
			m.finished["0190c4d2-0000-7000-8000-999999999999"] = memFinished{Info{ID: "0190c4d2-0000-7000-8000-999999999999", Name: "a.bin", Size: size, Blake3: want}, content}
		}, nil, nil, func(t *testing.T, m *memStreams, r streamResult) {
			mustInfo(t, r, want)
			if r.info.ID != "0190c4d2-0000-7000-8000-999999999999" || len(m.reused) != 1 || len(m.partial) != 0 || r.progress != size {
				t.Fatalf("id %s, reused %v, progress %d: not named again", r.info.ID, m.reused, r.progress)
			}
		}},
		{"finished but damaged: avoided, uploaded afresh", want, func(m *memStreams) {
			m.finished["0190c4d2-0000-7000-8000-999999999999"] = memFinished{Info{ID: "0190c4d2-0000-7000-8000-999999999999", Name: "a.bin", Size: size, Blake3: want}, other}
		}, nil, nil, func(t *testing.T, m *memStreams, r streamResult) {
			mustInfo(t, r, want)
			if r.info.ID == "0190c4d2-0000-7000-8000-999999999999" || len(m.reused) != 0 || m.starts[1].Avoid != "0190c4d2-0000-7000-8000-999999999999" {
				t.Fatalf("id %s, reused %v, starts %+v: a damaged upload was named again", r.info.ID, m.reused, m.starts)
			}
		}},
		{"finished but longer than recorded: avoided", want, func(m *memStreams) {
			m.finished["0190c4d2-0000-7000-8000-999999999999"] = memFinished{Info{ID: "0190c4d2-0000-7000-8000-999999999999", Name: "a.bin", Size: size, Blake3: want}, append(append([]byte{}, content...), 'x')}
		}, nil, nil, func(t *testing.T, m *memStreams, r streamResult) {
			mustInfo(t, r, want)
			if r.info.ID == "0190c4d2-0000-7000-8000-999999999999" {
				t.Fatal("an upload longer than its metadata says was named again")
			}
		}},
		{"finished but cannot be marked used: uploaded afresh", want, func(m *memStreams) {
			m.noReuse = true
			m.finished["0190c4d2-0000-7000-8000-999999999999"] = memFinished{Info{ID: "0190c4d2-0000-7000-8000-999999999999", Name: "a.bin", Size: size, Blake3: want}, content}
		}, nil, nil, func(t *testing.T, m *memStreams, r streamResult) {
			mustInfo(t, r, want)
			if r.info.ID == "0190c4d2-0000-7000-8000-999999999999" {
				t.Fatal("named again an upload it could not mark used")
			}
		}},
		{"claimed in the batch: named as it is", want, func(m *memStreams) {
			b := NewGroupBatch[string, []string](m, newFakeCommits(), 100)
			b.Claim(want, "a.bin", "0190c4d2-0000-7000-8000-888888888888")
			m.batch = b
		}, nil, nil, func(t *testing.T, m *memStreams, r streamResult) {
			mustInfo(t, r, want)
			if r.info.ID != "0190c4d2-0000-7000-8000-888888888888" || len(m.starts) != 0 || r.progress != size {
				t.Fatalf("id %s: the batch's claim was not named", r.info.ID)
			}
			if b := m.batch.(*GroupBatch[string, []string]); b.active != 0 {
				t.Fatalf("the stream left %d streams entered in the batch", b.active)
			}
		}},
		{"a batch of another store: refused, nothing started", want, func(m *memStreams) {
			m.batch = NewGroupBatch[string, []string](newMemStreams(), newFakeCommits(), 100)
		}, nil, nil, func(t *testing.T, m *memStreams, r streamResult) {
			if fault.CodeOf(r.err) != fault.UploadInvalid || len(m.starts) != 0 {
				t.Fatalf("err %v, %d starts: want upload.invalid and none", r.err, len(m.starts))
			}
			if b := m.batch.(*GroupBatch[string, []string]); b.active != 0 {
				t.Fatal("another store's batch was entered")
			}
		}},
		{"resume: an equal prefix is kept, the rest written", want, func(m *memStreams) {
			m.partial["/src/a.bin"] = &memStream{m: m, id: "0190c4d2-0000-7000-8000-777777777777", path: "/src/a.bin", name: "a.bin", size: size, sum: want, data: append([]byte{}, content[:300]...)}
		}, nil, nil, func(t *testing.T, m *memStreams, r streamResult) {
			mustInfo(t, r, want)
			f := m.finished["0190c4d2-0000-7000-8000-777777777777"]
			if !bytes.Equal(f.data, content) || len(r.resumed) != 1 || r.resumed[0] != 300 || r.progress != size || !bytes.Equal(r.observed, content) {
				t.Fatalf("resumed %v, progress %d, observed %d bytes, finished %d bytes", r.resumed, r.progress, len(r.observed), len(f.data))
			}
		}},
		{"resume: a prefix that differs is dropped whole", want, func(m *memStreams) {
			m.partial["/src/a.bin"] = &memStream{m: m, id: "0190c4d2-0000-7000-8000-777777777777", path: "/src/a.bin", name: "a.bin", size: size, sum: want, data: append([]byte{}, other[:300]...)}
		}, nil, nil, func(t *testing.T, m *memStreams, r streamResult) {
			mustInfo(t, r, want)
			if len(r.resumed) != 0 || r.progress != size || !bytes.Equal(r.observed, content) || !bytes.Equal(m.finished[r.info.ID].data, content) {
				t.Fatalf("resumed %v, progress %d, observed %d bytes", r.resumed, r.progress, len(r.observed))
			}
		}},
		{"resume: stored for a source of another size starts over uncompared", want, func(m *memStreams) {
			m.partial["/src/a.bin"] = &memStream{m: m, id: "0190c4d2-0000-7000-8000-777777777777", path: "/src/a.bin", name: "a.bin", size: size + 1, sum: want, data: append([]byte{}, content[:300]...)}
		}, nil, nil, func(t *testing.T, m *memStreams, r streamResult) {
			mustInfo(t, r, want)
			if len(r.resumed) != 0 {
				t.Fatalf("resumed %v the bytes of another source", r.resumed)
			}
		}},
		{"resume: stored for another BLAKE3 starts over uncompared", want, func(m *memStreams) {
			m.partial["/src/a.bin"] = &memStream{m: m, id: "0190c4d2-0000-7000-8000-777777777777", path: "/src/a.bin", name: "a.bin", size: size, sum: sum3(other), data: append([]byte{}, content[:300]...)}
		}, nil, nil, func(t *testing.T, m *memStreams, r streamResult) {
			mustInfo(t, r, want)
			if len(r.resumed) != 0 {
				t.Fatalf("resumed %v the bytes of another source", r.resumed)
			}
		}},
		{"resume: more stored than the source holds starts over", want, func(m *memStreams) {
			m.partial["/src/a.bin"] = &memStream{m: m, id: "0190c4d2-0000-7000-8000-777777777777", path: "/src/a.bin", name: "a.bin", size: size, data: append(append([]byte{}, content...), 'x')}
		}, nil, nil, func(t *testing.T, m *memStreams, r streamResult) {
			mustInfo(t, r, want)
			if len(r.resumed) != 0 || !bytes.Equal(m.finished[r.info.ID].data, content) {
				t.Fatalf("resumed %v", r.resumed)
			}
		}},
		{"resume checked by the backend: told what it holds", want, func(m *memStreams) { m.held = 256 }, nil, nil, func(t *testing.T, m *memStreams, r streamResult) {
			mustInfo(t, r, want)
			if len(r.resumed) != 1 || r.resumed[0] != 256 {
				t.Fatalf("resumed %v", r.resumed)
			}
		}},
		{"bytes not the record's: refused, not published", sum3(other), nil, nil, nil, func(t *testing.T, m *memStreams, r streamResult) {
			if fault.CodeOf(r.err) != fault.UploadHashMismatch || len(m.finished) != 0 || m.partial["/src/a.bin"].refused != want {
				t.Fatalf("err %v, finished %d", r.err, len(m.finished))
			}
		}},
		{"source moved: refused", want, nil, &memStreamSource{Reader: bytes.NewReader(content), changed: true}, nil, func(t *testing.T, m *memStreams, r streamResult) {
			if fault.CodeOf(r.err) != fault.UploadSourceChange || len(m.finished) != 0 {
				t.Fatalf("err %v", r.err)
			}
		}},
		{"another run took the upload: progress taken back, started over", want, func(m *memStreams) { m.lose = 1 }, nil, nil, func(t *testing.T, m *memStreams, r streamResult) {
			mustInfo(t, r, want)
			if len(m.starts) != 2 || m.starts[1].Try != 1 || r.progress != size {
				t.Fatalf("starts %+v, progress %d", m.starts, r.progress)
			}
		}},
		{"cancelled: stops, keeps what was written", want, nil, nil, func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, func(t *testing.T, m *memStreams, r streamResult) {
			if r.err != context.Canceled || len(m.finished) != 0 || m.partial["/src/a.bin"] == nil {
				t.Fatalf("err %v, finished %d", r.err, len(m.finished))
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newMemStreams()
			if c.setup != nil {
				c.setup(m)
			}
			src := c.src
			if src == nil {
				src = &memStreamSource{Reader: bytes.NewReader(content)}
			}
			ctx := context.Background()
			if c.ctx != nil {
				ctx = c.ctx()
			}
			var r streamResult
			opts := StreamOptions{Chunk: chunk,
				Progress: func(n int64) { r.progress += n },
				Resumed:  func(off int64) { r.resumed = append(r.resumed, off) },
				Observe: func(p []byte) {
					if p == nil {
						r.observed = nil
					}
					r.observed = append(r.observed, p...)
				},
				Batch: m.batch}
			r.info, r.err = StreamUpload(ctx, m, Source{Path: "/src/a.bin", Name: "a.bin", Size: size, Blake3: c.blake}, src, opts.WithDefaults(chunk))
			for _, w := range m.partial {
				if w.closed > 1 {
					t.Errorf("write %s closed %d times", w.id, w.closed)
				}
			}
			c.check(t, m, r)
		})
	}
}

// result is what StreamUpload returned and told its callbacks.
type streamResult struct {
	info     *Info
	err      error
	progress int64   // the sum of what Progress was told
	resumed  []int64 // each Resumed
	observed []byte  // what Observe saw since its last nil
}

func mustInfo(t *testing.T, r streamResult, want string) {
	t.Helper()
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.info.Blake3 != want || r.info.Name != "a.bin" {
		t.Fatalf("info %+v", r.info)
	}
}

// TestSourceKey pins the key: S3's source notes are named by it, and a note written now must
// still find its upload for a later version (a resume, a file named again). No path goes in, so
// the same bytes under the same name find it from any path.
func TestSourceKey(t *testing.T) {
	got := SourceKey("a.bin", 2354, "cd0831ab4ac14b7a5880e08d427148f2089dfd41d41db288179e8fa5bb823fbc")
	if want := "028e6450fbc7ca9e988f73fc549db6fe337cc08414351dba40af7a97874c252d"; got != want {
		t.Fatalf("SourceKey is %s, was %s", got, want)
	}
}

// Pump with a put that keeps each chunk on goroutines of its own, as S3's part workers do: every
// chunk is put once at its offset, the hash is of the source's bytes in order, and no more than
// cap(free) buffers are ever out, however slow the holders.
func TestPumpAsyncPut(t *testing.T) {
	data := make([]byte, 10*1000+7)
	for i := range data {
		data[i] = byte(i * 7)
	}
	free := make(chan []byte, 3)
	for range cap(free) {
		free <- nil
	}
	var mu sync.Mutex
	var out, most int
	got := make([]byte, len(data))
	var wg sync.WaitGroup
	h := blake3.New()
	var progress int64
	pass := StreamPass{Size: int64(len(data)), Chunk: 1000, Hash: h, Observe: func([]byte) {}, Progress: func(k int64) { progress += k }}
	err := Pump(context.Background(), &memStreamSource{Reader: bytes.NewReader(data)}, 0, pass, free, func(off int64, b []byte, done func()) error {
		mu.Lock()
		out++
		most = max(most, out)
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Millisecond)
			copy(got[off:], b)
			mu.Lock()
			out--
			mu.Unlock()
			done()
		}()
		return nil
	})
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) || hex.EncodeToString(h.Sum(nil)) != sum3(data) || progress != int64(len(data)) {
		t.Fatalf("the chunks put, the hash or the progress are not the source's")
	}
	if most > cap(free) || len(free) != cap(free) {
		t.Fatalf("%d buffers out at once, %d back at the end; the pool has %d", most, len(free), cap(free))
	}
}
