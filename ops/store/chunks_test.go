package store

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/zeebo/blake3"
)

// memChunks is the smallest ChunkBackend: unfinished uploads and finished ones in maps. It tests
// the step-by-step upload's rules apart from any backend, streamed (as local) or buffered (as S3).
type memChunks struct {
	mu       sync.Mutex
	buffer   bool
	partial  map[string]*ChunkState
	data     map[string][]byte
	finished map[string]*Info
	maxFile  int64 // the store's limit on a file (0: none)
	race     bool  // Publish finds the upload finished by another first
	quota    *Quota
	// hooked: OpenChunks tells only whether it holds an unfinished upload, ChunkProperties'
	// Finished the rest; leftover is what a finish killed after its publish left (DropLeftover).
	hooked   bool
	leftover map[string]bool
	tells    bool // hooked, and OpenChunks tells a finished upload all the same
}

func (m *memChunks) ChunkProperties() ChunkProperties {
	p := ChunkProperties{Buffer: m.buffer}
	if m.hooked {
		p.Finished = func(_ context.Context, id string) (*Info, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			if info := m.finished[id]; info != nil {
				return info, nil
			}
			return nil, fault.Errorf(fault.UploadMissing, "upload %s: not finished", id)
		}
		p.DropLeftover = func(_ context.Context, id string) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			delete(m.leftover, id)
			return nil
		}
	}
	return p
}

func (m *memChunks) OpenChunks(_ context.Context, id string) (ChunkUpload, *Info, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if st := m.partial[id]; st != nil {
		c := *st
		c.Offset = int64(len(m.data[id]))
		return &memChunk{m: m, id: id, st: c}, nil, nil
	}
	if m.hooked && !m.tells {
		return nil, nil, fault.Errorf(fault.UploadMissing, "upload %s: not there", id)
	}
	return nil, m.finished[id], fault.Errorf(fault.UploadMissing, "upload %s: not there", id)
}

// ChunkQuota: the limits are maxFile's, the reservations a memReserver's.
func (m *memChunks) ChunkQuota() *Quota {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.quota == nil {
		m.quota = &Quota{R: &memReserver{rs: map[string][]byte{}}, Loc: "mem",
			List: func(context.Context) (*Listing, error) { return &Listing{}, nil },
			M:    fixedMark(MarkText(Limits{MaxFile: m.maxFile}))}
	}
	return m.quota
}

type memChunk struct {
	m  *memChunks
	id string
	st ChunkState
}

func (c *memChunk) State() ChunkState { return c.st }
func (c *memChunk) Close()            {}

func (c *memChunk) Drop(context.Context) error {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	delete(c.m.partial, c.id)
	delete(c.m.data, c.id)
	return nil
}

func (c *memChunk) Append(_ context.Context, cur int64, r io.Reader, limit int64, over func(int64) error) (int64, error) {
	b, err := ReadChunk(c.id, r, limit, over)
	if err != nil {
		return cur, err
	}
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	c.m.data[c.id] = append(c.m.data[c.id], b...)
	return cur + int64(len(b)), nil
}

func (c *memChunk) Publish(_ context.Context, check func(string) error) (*Info, bool, error) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	d := c.m.data[c.id]
	if err := check(hexOf(d)); err != nil {
		return nil, false, err
	}
	info := &Info{ID: c.id, Name: c.st.Name, Size: int64(len(d)), Blake3: hexOf(d)}
	if c.m.race {
		info.Size++ // another finish's upload, of other bytes
		info.Blake3 = strings.Repeat("0", 64)
	}
	c.m.finished[c.id] = info
	delete(c.m.partial, c.id)
	return info, c.m.race, nil
}

func hexOf(b []byte) string {
	h := blake3.Sum256(b)
	return hex.EncodeToString(h[:])
}

type failReader struct{}

func (failReader) Read([]byte) (int, error) { return 0, errors.New("pipe broke") }

func TestChunkRules(t *testing.T) {
	const id = "0190c4d2-0000-7000-8000-000000000001"
	const done = "0190c4d2-0000-7000-8000-000000000002"
	type step struct {
		finish bool   // else a chunk
		offset int64  // a chunk's offset
		data   string // a chunk's bytes
		r      func() io.Reader
		size   int64  // finish's
		sum    string // finish's: "=" the BLAKE3 of what was written
		want   fault.Code
		wantAt int64 // the offset a chunk returns
		msg    string
	}
	split := func() io.Reader { return io.MultiReader(strings.NewReader("d"), strings.NewReader("ef")) }
	cases := []struct {
		name    string
		size    int64
		kind    string
		maxFile int64
		race    bool
		steps   []step
	}{
		{name: "chunks then finish", size: 10, steps: []step{
			{data: "hello", wantAt: 5},
			{offset: 5, data: "world", wantAt: 10},
			{finish: true, size: 10, sum: "="},
			{finish: true, size: 10, sum: "="}, // again: the finished one, same checks
			{finish: true, size: 11, want: fault.UploadSizeMismatch, msg: "finished with 10 bytes, not 11"},
			{offset: 10, data: "x", want: fault.UploadOffset, wantAt: 10, msg: "finished at offset 10"},
		}},
		{name: "wrong offset", size: -1, steps: []step{
			{data: "abc", wantAt: 3},
			{offset: 1, data: "x", want: fault.UploadOffset, wantAt: 3, msg: "offset 1 is not the current offset 3"},
		}},
		{name: "past the declared size", size: 4, steps: []step{
			{data: "abc", wantAt: 3},
			{offset: 3, data: "de", want: fault.UploadPastSize, wantAt: 3, msg: "a chunk of 2 or more bytes at offset 3 would pass the declared size 4"},
			{offset: 3, r: split, want: fault.UploadPastSize, wantAt: 3},
			{offset: 3, data: "d", wantAt: 4},
		}},
		{name: "over the limits", size: -1, maxFile: 4, steps: []step{
			{data: "abc", wantAt: 3},
			{offset: 3, data: "de", want: fault.UploadTooLarge, wantAt: 3},
			{offset: 3, r: split, want: fault.UploadTooLarge, wantAt: 3},
			{finish: true, size: -1, sum: "="},
		}},
		{name: "a producer that fails", size: -1, steps: []step{
			{r: func() io.Reader { return failReader{} }, want: fault.FileUnreadable, msg: "reading the chunk: pipe broke"},
			{data: "a", wantAt: 1},
		}},
		{name: "empty chunk", size: -1, steps: []step{{data: "", wantAt: 0}, {finish: true, size: 0, sum: "="}}},
		{name: "finish short", size: 10, steps: []step{
			{data: "hello", wantAt: 5},
			{finish: true, size: -1, want: fault.UploadSizeMismatch, msg: "has 5 bytes, expected 10"},
			{finish: true, size: 11, want: fault.UploadSizeMismatch, msg: "declared 10 bytes at begin, 11 at finish"},
		}},
		{name: "open size fixed at finish", size: -1, steps: []step{
			{data: "hello", wantAt: 5},
			{finish: true, size: 6, want: fault.UploadSizeMismatch, msg: "has 5 bytes, expected 6"},
			{finish: true, size: 5, sum: strings.Repeat("0", 64), want: fault.UploadHashMismatch, msg: "BLAKE3 of the 5 bytes is"},
			{finish: true, size: 5, sum: "bad", want: fault.UploadInvalid},
			{finish: true, size: -2, want: fault.UploadInvalid},
			{finish: true, size: 5, sum: "="},
		}},
		{name: "finished by another meanwhile", size: -1, race: true, steps: []step{
			{data: "ab", wantAt: 2},
			{finish: true, size: 2, want: fault.UploadSizeMismatch, msg: "finished with 3 bytes, not 2"},
		}},
		{name: "a folder upload", size: -1, kind: KindFolder, steps: []step{
			{data: "a", want: fault.UploadInvalid, msg: "run the upload of the folder again to resume it"},
			{finish: true, size: -1, want: fault.UploadInvalid, msg: "to finish it"},
		}},
		{name: "the stage's", size: -1, kind: KindFile, steps: []step{
			{data: "a", want: fault.UploadInvalid, msg: "written by the upload stage"},
		}},
		{name: "a batch's", size: -1, kind: KindBatch, steps: []step{
			{finish: true, size: -1, want: fault.UploadInvalid, msg: "staging folder of a batch"},
		}},
	}
	for _, c := range cases {
		for _, buffer := range []bool{false, true} {
			t.Run(c.name+map[bool]string{false: " streamed", true: " buffered"}[buffer], func(t *testing.T) {
				m := &memChunks{buffer: buffer, maxFile: c.maxFile, race: c.race, data: map[string][]byte{},
					partial:  map[string]*ChunkState{id: {Name: "x.bin", Size: c.size, Kind: c.kind}},
					finished: map[string]*Info{done: {ID: done, Name: "y.bin", Size: 1}}}
				ctx := context.Background()
				for i, s := range c.steps {
					var err error
					var at int64
					if s.finish {
						sum := s.sum
						if sum == "=" {
							sum = hexOf(m.data[id])
						}
						var info *Info
						info, err = FinishChunks(ctx, m, id, s.size, sum)
						if err == nil && (info.ID != id || info.Blake3 != hexOf(m.data[id])) {
							t.Fatalf("step %d: finished %+v", i, info)
						}
					} else {
						var r io.Reader = strings.NewReader(s.data)
						if s.r != nil {
							r = s.r()
						}
						at, err = WriteChunk(ctx, m, id, s.offset, r)
						if at != s.wantAt {
							t.Fatalf("step %d: offset %d, want %d (%v)", i, at, s.wantAt, err)
						}
						if s.want != "" && int64(len(m.data[id])) != s.wantAt {
							t.Fatalf("step %d: a refused chunk left %q", i, m.data[id])
						}
					}
					if fault.CodeOf(err) != s.want || (err == nil) != (s.want == "") {
						t.Fatalf("step %d: %v, want %q", i, err, s.want)
					}
					if s.msg != "" && !strings.Contains(err.Error(), s.msg) {
						t.Fatalf("step %d: %q does not say %q", i, err, s.msg)
					}
				}
				if _, err := WriteChunk(ctx, m, "nope", 0, bytes.NewReader(nil)); fault.CodeOf(err) != fault.UploadInvalid {
					t.Fatalf("a bad id: %v", err)
				}
				if _, err := FinishChunks(ctx, m, done, 2, ""); fault.CodeOf(err) != fault.UploadSizeMismatch {
					t.Fatalf("finish of a finished upload of another size: %v", err)
				}
			})
		}
	}
	if err := CheckBegin("x.bin", -2); fault.CodeOf(err) != fault.UploadInvalid {
		t.Fatalf("begin with size -2: %v", err)
	}
	if err := CheckBegin("../x", 1); fault.CodeOf(err) != fault.UploadInvalid {
		t.Fatalf("begin with a name that is not plain: %v", err)
	}
}

// TestAbortChunks: an abort removes an unfinished upload whatever wrote it (a stage's too), and
// refuses a finished one, which it keeps (rm and a sweep remove those), with the message every
// backend gives.
func TestAbortChunks(t *testing.T) {
	const id, staged, done = "01900000-0000-7000-8000-000000000001", "01900000-0000-7000-8000-000000000003", "01900000-0000-7000-8000-000000000002"
	m := &memChunks{data: map[string][]byte{id: []byte("ab")},
		partial:  map[string]*ChunkState{id: {Name: "x.bin", Size: -1}, staged: {Name: "z.bin", Size: 3, Kind: KindFile}},
		finished: map[string]*Info{done: {ID: done, Name: "y.bin", Size: 1}}}
	ctx := context.Background()
	r := m.ChunkQuota().R
	for _, x := range []string{id, staged} {
		if err := r.PutReservation(ctx, x, []byte("begun")); err != nil {
			t.Fatal(err)
		}
		if err := AbortChunks(ctx, m, x); err != nil || m.partial[x] != nil {
			t.Fatalf("abort of %s: %v, left %+v", x, err, m.partial[x])
		}
		if rs, _ := r.Reservations(ctx); rs[x] != nil {
			t.Fatalf("abort of %s left its reservation", x)
		}
	}
	if err := AbortChunks(ctx, m, id); fault.CodeOf(err) != fault.UploadMissing {
		t.Fatalf("abort of an aborted upload: %v", err)
	}
	err := AbortChunks(ctx, m, done)
	if fault.CodeOf(err) != fault.UploadInvalid || !strings.Contains(err.Error(), "finished; abort removes only unfinished uploads") || m.finished[done] == nil {
		t.Fatalf("abort of a finished upload: %v", err)
	}
	if err := AbortChunks(ctx, m, "nope"); fault.CodeOf(err) != fault.UploadInvalid {
		t.Fatalf("a bad id: %v", err)
	}
}

// TestChunkFinishedHook: a backend whose OpenChunks tells only whether it holds an unfinished
// upload gets the finished upload's answers all the same, from ChunkProperties.Finished: a chunk
// is refused at the finished offset, a finish returns it after the same checks, an abort leaves
// it; and what a killed finish left of it as unfinished is removed the first time it is met.
func TestChunkFinishedHook(t *testing.T) {
	const done, gone = "01900000-0000-7000-8000-000000000002", "01900000-0000-7000-8000-000000000004"
	ctx := context.Background()
	fresh := func() *memChunks {
		return &memChunks{hooked: true, data: map[string][]byte{}, partial: map[string]*ChunkState{},
			finished: map[string]*Info{done: {ID: done, Name: "y.bin", Size: 1, Blake3: hexOf([]byte("y"))}},
			leftover: map[string]bool{done: true}}
	}
	m := fresh()
	if at, err := WriteChunk(ctx, m, done, 0, strings.NewReader("z")); fault.CodeOf(err) != fault.UploadOffset || at != 1 ||
		!strings.Contains(err.Error(), "finished at offset 1") {
		t.Fatalf("a chunk of a finished upload: %d, %v", at, err)
	}
	if m.leftover[done] {
		t.Fatal("the finish's leftover is still there")
	}
	m = fresh()
	if info, err := FinishChunks(ctx, m, done, 1, hexOf([]byte("y"))); err != nil || info.ID != done || m.leftover[done] {
		t.Fatalf("a finish of a finished upload: %+v, %v, leftover %v", info, err, m.leftover[done])
	}
	if _, err := FinishChunks(ctx, m, done, 2, ""); fault.CodeOf(err) != fault.UploadSizeMismatch {
		t.Fatalf("a finish of a finished upload at another size: %v", err)
	}
	m = fresh()
	if err := AbortChunks(ctx, m, done); fault.CodeOf(err) != fault.UploadInvalid || m.finished[done] == nil || m.leftover[done] {
		t.Fatalf("an abort of a finished upload: %v, leftover %v", err, m.leftover[done])
	}
	if _, err := WriteChunk(ctx, m, gone, 0, strings.NewReader("z")); fault.CodeOf(err) != fault.UploadMissing {
		t.Fatalf("a chunk of no upload: %v", err)
	}
	// A backend that tells a finished upload itself has its leftover removed all the same.
	m = fresh()
	m.tells = true
	if at, err := WriteChunk(ctx, m, done, 0, strings.NewReader("z")); fault.CodeOf(err) != fault.UploadOffset || at != 1 || m.leftover[done] {
		t.Fatalf("a chunk of a finished upload the backend told: %d, %v, leftover %v", at, err, m.leftover[done])
	}
}

// TestChunkStateKind: what began an unfinished upload is told the same way on every backend, and
// only the step-by-step upload's own takes chunks: a folder upload's is a folder's even where its
// info says it was streamed, a batch's staging area is never a file's.
func TestChunkStateKind(t *testing.T) {
	for _, c := range []struct {
		of   PartialOf
		kind string
	}{
		{PartialOf{Name: "a.bin"}, ""},
		{PartialOf{Name: "a.bin", Streamed: true, Path: "/src/a.bin"}, KindFile},
		{PartialOf{Name: "d", Folder: true, Path: "/src/d"}, KindFolder},
		{PartialOf{Name: "d", Folder: true, Streamed: true}, KindFolder},
		{PartialOf{Name: ".batch", Batch: true}, KindBatch},
		{PartialOf{Name: ".batch", Batch: true, Streamed: true}, KindBatch},
	} {
		st := c.of.ChunkState(7, 3)
		if st != (ChunkState{Name: c.of.Name, Size: 7, Offset: 3, Kind: c.kind}) {
			t.Errorf("%+v: %+v, want kind %q", c.of, st, c.kind)
		}
		if err := refuseStaged("u", st, "finish"); (err == nil) != (c.kind == "") {
			t.Errorf("%+v: refused %v", c.of, err)
		}
	}
}

// errReader gives its bytes, then its error.
type errReader struct {
	b   []byte
	err error
}

func (r *errReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, r.err
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// TestCopyChunk: a streamed chunk is written piece by piece at its offsets; the piece that would
// pass the limit is refused with over(n) before it is written, and a failing producer is
// file.unreadable, so that the caller keeps nothing.
func TestCopyChunk(t *testing.T) {
	var got []string
	write := func(b []byte, off int64) error {
		got = append(got, fmt.Sprintf("%d:%s", off, b))
		return nil
	}
	over := func(n int64) error { return fmt.Errorf("over %d", n) }
	n, err := CopyChunk("u", strings.NewReader("abcdefg"), make([]byte, 3), -1, over, write)
	if err != nil || n != 7 || strings.Join(got, " ") != "0:abc 3:def 6:g" {
		t.Fatalf("no limit: %d %v %q", n, err, got)
	}
	got = nil
	n, err = CopyChunk("u", strings.NewReader("abcdefg"), make([]byte, 3), 5, over, write)
	if err == nil || err.Error() != "over 6" || n != 3 || strings.Join(got, " ") != "0:abc" {
		t.Fatalf("limit 5: %d %v %q", n, err, got)
	}
	got = nil
	n, err = CopyChunk("u", strings.NewReader("abcdef"), make([]byte, 3), 6, over, write)
	if err != nil || n != 6 {
		t.Fatalf("exactly the limit: %d %v %q", n, err, got)
	}
	got = nil
	_, err = CopyChunk("u", &errReader{[]byte("ab"), errors.New("pipe broke")}, make([]byte, 3), -1, over, write)
	if fault.CodeOf(err) != fault.FileUnreadable {
		t.Fatalf("a failing producer: %v", err)
	}
	failed := errors.New("disk")
	if _, err = CopyChunk("u", strings.NewReader("abcdef"), make([]byte, 3), -1, over, func([]byte, int64) error { return failed }); err != failed {
		t.Fatalf("a failing write: %v", err)
	}
}
