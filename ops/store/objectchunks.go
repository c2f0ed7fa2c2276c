package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/attachctl/attachctl/manifest/fault"
)

// A step-by-step upload kept as objects (S3): each chunk is the object c/<offset> of its partial
// (Chunks reads them back), written create-only, so that of two writers at one offset one wins;
// a finish reads them in offset order as one file.

// chunkKey is the chunk at offset off of the unfinished upload id: its offset in twenty digits,
// so that the chunks list in offset order.
func chunkKey(id string, off int64) string { return partialDir(id) + fmt.Sprintf("c/%020d", off) }

// PutChunk keeps b as the chunk at offset cur of the unfinished upload id, create-only: a write
// whose answer was lost finds its own bytes there (Objects.Put; a chunk is the same bytes at its
// offset whoever wrote them). Another writer at cur first is upload.offset, with the current
// offset, now. It returns the new offset.
func PutChunk(ctx context.Context, o Objects, id string, cur int64, b []byte, now func() int64) (int64, error) {
	_, err := o.Put(ctx, chunkKey(id, cur), "", b)
	switch {
	case errors.Is(err, ErrObjectChanged):
		n := now()
		return n, fault.Errorf(fault.UploadOffset, "upload %s: another writer took offset %d; the current offset is %d", id, cur, n)
	case err != nil:
		return cur, objectErr("upload "+id, err, fault.UploadUnreadable)
	}
	return cur + int64(len(b)), nil
}

// ChunkSource is the chunks of the unfinished upload id, in offset order as ChunkRun gives them,
// read as one file (SourceFile): a read is a read of each chunk it spans, from where it starts in
// it. Read is the backend's: fill b from byte from of the chunk named name in the partial (an
// error upload.unreadable; short: the bytes it read).
type ChunkSource struct {
	ID     string
	Chunks []Chunk
	Read   func(name string, from int64, b []byte) (int, error)
}

func (c ChunkSource) Name() string     { return "upload " + c.ID }
func (c ChunkSource) Unchanged() error { return nil }

func (c ChunkSource) ReadAt(b []byte, off int64) (int, error) {
	n := 0
	for i := sort.Search(len(c.Chunks), func(i int) bool { return c.Chunks[i].Off+c.Chunks[i].Size > off }); n < len(b) && i < len(c.Chunks); i++ {
		ch := c.Chunks[i]
		from := off + int64(n) - ch.Off
		k := min(int64(len(b)-n), ch.Size-from)
		m, err := c.Read(ch.Name, from, b[n:n+int(k)])
		if n += m; err != nil {
			return n, err
		}
	}
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}
