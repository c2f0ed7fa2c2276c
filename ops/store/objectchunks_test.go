package store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
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
