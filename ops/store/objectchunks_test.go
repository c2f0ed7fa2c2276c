package store

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/zeebo/blake3"
)

// listChunks is the chunks PutChunk wrote, as a backend lists them (ChunkRun over the objects of
// the partial, by their names in it, with their sizes).
func listChunks(t *testing.T, o *MapObjects, id string) ([]Chunk, int64) {
	t.Helper()
	ctx := context.Background()
	keys, err := o.List(ctx, partialDir(id))
	if err != nil {
		t.Fatal(err)
	}
	var objs []FolderObject
	for _, k := range keys {
		obj, err := o.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, FolderObject{Name: strings.TrimPrefix(k, partialDir(id)), Size: int64(len(obj.Body))})
	}
	cs, end, err := ChunkRun(id, objs)
	if err != nil {
		t.Fatal(err)
	}
	return cs, end
}

// Chunks put at their offsets are read back in offset order, whatever their number of digits; a
// second writer at an offset taken is upload.offset with the current offset, and its bytes are not
// kept; the same bytes again (a write whose answer was lost) are taken.
func TestPutChunk(t *testing.T) {
	ctx := context.Background()
	o := &MapObjects{}
	now := func() int64 { _, end := listChunks(t, o, dropID); return end }
	cur := int64(0)
	var want []byte
	for _, b := range [][]byte{[]byte("0123456789"), []byte("ab"), bytes.Repeat([]byte("x"), 100)} {
		var err error
		if cur, err = PutChunk(ctx, o, dropID, cur, b, now); err != nil {
			t.Fatal(err)
		}
		want = append(want, b...)
	}
	if cur != int64(len(want)) {
		t.Fatalf("offset %d, want %d", cur, len(want))
	}
	got, err := PutChunk(ctx, o, dropID, 10, []byte("zz"), now)
	if fault.CodeOf(err) != fault.UploadOffset || got != cur {
		t.Fatalf("a second writer at 10: %d, %v; want upload.offset and %d", got, err, cur)
	}
	if got, err := PutChunk(ctx, o, dropID, 10, []byte("ab"), now); err == nil || got != cur {
		t.Fatalf("another writer's bytes again at 10: %d, %v; want refused at %d", got, err, cur)
	}
	// The keys are those earlier versions wrote and read: twenty digits, listed in offset order.
	if _, err := o.Get(ctx, ".attachctl/partial/"+dropID+"/c/00000000000000000010"); err != nil {
		t.Fatalf("the chunk at 10: %v", err)
	}
	cs, end := listChunks(t, o, dropID)
	if len(cs) != 3 || end != cur {
		t.Fatalf("chunks %v end %d", cs, end)
	}
	src := ChunkSource{ID: dropID, Chunks: cs, Read: func(name string, from int64, b []byte) (int, error) {
		obj, err := o.Get(ctx, partialDir(dropID)+name)
		if err != nil {
			return 0, err
		}
		return copy(b, obj.Body[from:]), nil
	}}
	all := make([]byte, len(want))
	if n, err := src.ReadAt(all, 0); err != nil || !bytes.Equal(all[:n], want) {
		t.Fatalf("read %q, %v; want %q", all[:n], err, want)
	}
}

// A read at any offset spans the chunks it needs from where it starts in each; past the end it is
// short, io.EOF; a chunk's error stops it with the bytes read.
func TestChunkSource(t *testing.T) {
	data := []byte("abcdefghijklmnopqrstuvwxyz")
	var cs []Chunk
	for off, size := range map[int]int{0: 3, 3: 1, 4: 10, 14: 12} {
		cs = append(cs, Chunk{FolderObject{Name: "c/" + string(rune('a'+off)), Size: int64(size)}, int64(off)})
	}
	cs, _, _ = ChunkRun(dropID, func() []FolderObject {
		var objs []FolderObject
		for _, c := range cs {
			objs = append(objs, FolderObject{Name: chunkKey(dropID, c.Off)[len(partialDir(dropID)):], Size: c.Size})
		}
		return objs
	}())
	bad := ""
	src := ChunkSource{ID: dropID, Chunks: cs, Read: func(name string, from int64, b []byte) (int, error) {
		for _, c := range cs {
			if c.Name == name {
				if name == bad {
					return 0, fault.Errorf(fault.UploadUnreadable, "%s: gone", name)
				}
				if from < 0 || from+int64(len(b)) > c.Size {
					t.Fatalf("read of %s from %d of %d bytes: past the chunk of %d", name, from, len(b), c.Size)
				}
				return copy(b, data[c.Off+from:]), nil
			}
		}
		t.Fatalf("no chunk %s", name)
		return 0, nil
	}}
	for off := 0; off <= len(data); off++ {
		for n := 0; off+n <= len(data)+2; n++ {
			b := make([]byte, n)
			got, err := src.ReadAt(b, int64(off))
			wantN := min(n, len(data)-off)
			if got != wantN || !bytes.Equal(b[:got], data[off:off+wantN]) {
				t.Fatalf("ReadAt(%d, %d) = %q, want %q", n, off, b[:got], data[off:off+wantN])
			}
			if (err == io.EOF) != (wantN < n) || err != nil && err != io.EOF {
				t.Fatalf("ReadAt(%d, %d): %v", n, off, err)
			}
		}
	}
	bad = cs[2].Name
	b := make([]byte, 10)
	if n, err := src.ReadAt(b, 2); n != 2 || fault.CodeOf(err) != fault.UploadUnreadable || errors.Is(err, io.EOF) {
		t.Fatalf("a chunk's error: %d, %v", n, err)
	}
}

// stepInfo is a ChunkInfo: what a backend's info of a step-by-step upload says.
type stepInfo struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
}

func (p *stepInfo) Of() PartialOf           { return PartialOf{Name: p.Name} }
func (p *stepInfo) Declared() int64         { return p.Size }
func (p *stepInfo) Sized(n int64) *stepInfo { return &stepInfo{Name: p.Name, Size: n} }

// stepRig is ObjectChunks over MapObjects, a part of partBytes: finished uploads in a map, and
// what the backend was asked to write and remove.
type stepRig struct {
	o        *MapObjects
	c        ObjectChunks[*stepInfo]
	finished map[string]*Info
	whole    int   // PutWhole calls
	parts    []int // sizes sent by PutParts
	dropped  []string
	infoAt   *stepInfo // the info a put found
}

func newStepRig(t *testing.T, partBytes int64) *stepRig {
	ctx := context.Background()
	r := &stepRig{o: &MapObjects{}, finished: map[string]*Info{}}
	publish := func(id, name, sum string, n int64) error {
		r.infoAt, _ = ReadInfo[*stepInfo](ctx, r.o, id, "S")
		if r.finished[id] != nil {
			return ErrObjectChanged
		}
		r.finished[id] = &Info{ID: id, Name: name, Size: n, Blake3: sum}
		return nil
	}
	r.c = ObjectChunks[*stepInfo]{O: r.o, Loc: "S", Part: partBytes,
		Quota: &Quota{R: &memReserver{rs: map[string][]byte{}}, Loc: "S", List: func(context.Context) (*Listing, error) { return &Listing{}, nil },
			M: fixedMark(MarkText(Limits{}))},
		Exists: func(context.Context, string) error { return nil },
		List: func(ctx context.Context, id string) ([]FolderObject, error) {
			keys, err := r.o.List(ctx, partialDir(id))
			var objs []FolderObject
			for _, k := range keys {
				obj, _ := r.o.Get(ctx, k)
				objs = append(objs, FolderObject{Name: strings.TrimPrefix(k, partialDir(id)), Size: int64(len(obj.Body))})
			}
			return objs, err
		},
		Read: func(ctx context.Context, id, name string, from int64, b []byte) (int, error) {
			obj, err := r.o.Get(ctx, partialDir(id)+name)
			if err != nil {
				return 0, err
			}
			return copy(b, obj.Body[from:]), nil
		},
		Info: func(_ context.Context, id string) (*Info, error) {
			if i := r.finished[id]; i != nil {
				return i, nil
			}
			return nil, NotFinished(id, "S")
		},
		Drop: func(ctx context.Context, id string, _ *stepInfo) error {
			r.dropped = append(r.dropped, id)
			keys, _ := r.o.List(ctx, partialDir(id))
			for _, k := range keys {
				r.o.Delete(ctx, k, "")
			}
			return nil
		},
		PutWhole: func(_ context.Context, id, name, sum string, body []byte) error {
			r.whole++
			return publish(id, name, sum, int64(len(body)))
		},
		PutParts: func(ctx context.Context, id, name, sum string, src SourceFile, size int64, check func(string) error) error {
			r.parts = append(r.parts, int(size))
			sent, err := HashSource(ctx, src, size, 3, nil)
			if err == nil {
				err = check(sent)
			}
			if err != nil {
				return err
			}
			return publish(id, name, sum, size)
		}}
	return r
}

// begin writes the info of a new step-by-step upload, as a backend's Begin does.
func (r *stepRig) begin(t *testing.T, id, name string, size int64) {
	t.Helper()
	if err := WriteInfo(context.Background(), r.o, id, &stepInfo{Name: name, Size: size}, ""); err != nil {
		t.Fatal(err)
	}
}

// A finish of an upload kept as objects puts its bytes in one write when they fit a part, else
// in parts of them read again (each way of an empty, a small, a part's and a larger upload); an
// open size is fixed in its info before the put, so that a partial left after it is seen
// finished: taken up again, it is the finished upload, and the leftover is removed.
func TestObjectChunksPublish(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{0, 5, 8, 9, 20} {
		r := newStepRig(t, 8)
		data := bytes.Repeat([]byte("abcdefg"), 3)[:n]
		r.begin(t, dropID, "f.bin", -1)
		for off := 0; off < n; off += 4 {
			end := min(off+4, n)
			if cur, err := WriteChunk(ctx, r.c, dropID, int64(off), bytes.NewReader(data[off:end])); err != nil || cur != int64(end) {
				t.Fatalf("%d bytes: chunk at %d: %d, %v", n, off, cur, err)
			}
		}
		sum := blake3.Sum256(data)
		want := hex.EncodeToString(sum[:])
		info, err := FinishChunks(ctx, r.c, dropID, -1, want)
		if err != nil || info.Size != int64(n) || info.Blake3 != want {
			t.Fatalf("%d bytes: finish %+v, %v", n, info, err)
		}
		if whole := n <= 8; whole && (r.whole != 1 || r.parts != nil) || !whole && (r.whole != 0 || len(r.parts) != 1 || r.parts[0] != n) {
			t.Fatalf("%d bytes: %d whole puts, parts %v; want one %s", n, r.whole, r.parts, map[bool]string{true: "whole", false: "in parts"}[whole])
		}
		if r.infoAt == nil || r.infoAt.Size != int64(n) {
			t.Fatalf("%d bytes: the info at the put %+v, want its size fixed", n, r.infoAt)
		}
		// The partial left as a finish whose removal failed leaves it: finished, and removed.
		r.begin(t, dropID, "f.bin", int64(n))
		if n > 0 {
			if _, err := PutChunk(ctx, r.o, dropID, 0, data, nil); err != nil {
				t.Fatal(err)
			}
		}
		r.dropped = nil
		if cur, err := WriteChunk(ctx, r.c, dropID, int64(n), strings.NewReader("x")); fault.CodeOf(err) != fault.UploadOffset || cur != int64(n) {
			t.Fatalf("%d bytes: a chunk after a finish left its partial: %d, %v", n, cur, err)
		}
		if len(r.dropped) != 1 {
			t.Fatalf("%d bytes: the leftover partial was not removed (%v)", n, r.dropped)
		}
	}
}

// A finish that finds the upload written by another's finish first is that one; a part's bytes
// read again that are not those hashed keep the upload unfinished.
func TestObjectChunksPublishRaced(t *testing.T) {
	ctx := context.Background()
	r := newStepRig(t, 2)
	r.begin(t, dropID, "f.bin", 6)
	if _, err := WriteChunk(ctx, r.c, dropID, 0, strings.NewReader("abcdef")); err != nil {
		t.Fatal(err)
	}
	up, _, err := r.c.OpenChunks(ctx, dropID)
	if err != nil {
		t.Fatal(err)
	}
	other := &Info{ID: dropID, Name: "f.bin", Size: 6, Blake3: noteSum}
	r.finished[dropID] = other // by another finish, after this one took the upload up
	info, already, err := up.Publish(ctx, func(string) error { return nil })
	if err != nil || !already || info != other {
		t.Fatalf("raced: %+v, %v, %v; want the other's", info, already, err)
	}
	delete(r.finished, dropID)
	r.begin(t, dropID, "f.bin", 6)
	if _, err := WriteChunk(ctx, r.c, dropID, 0, strings.NewReader("abcdef")); err != nil {
		t.Fatal(err)
	}
	r.c.Read = func(_ context.Context, _, _ string, from int64, b []byte) (int, error) {
		return copy(b, "abcdeX"[from:]), nil
	}
	r.c.PutParts = func(ctx context.Context, id, name, sum string, src SourceFile, size int64, check func(string) error) error {
		return check(noteSum)
	}
	if up, _, err = r.c.OpenChunks(ctx, dropID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := up.Publish(ctx, func(string) error { return nil }); fault.CodeOf(err) != fault.UploadUnreadable {
		t.Fatalf("parts read again unlike those hashed: %v", err)
	}
}
