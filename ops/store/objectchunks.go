package store

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/zeebo/blake3"
)

// A step-by-step upload kept as objects (S3): its info is the small object
// .attachctl/partial/<id>/info (ReadInfo), each chunk the object c/<offset> beside it (Chunks
// reads them back), written create-only, so that of two writers at one offset one wins; a finish
// reads them in offset order as one file. ObjectChunks is its ChunkBackend, written once over
// what only the backend does.

// ChunkInfo is a backend's info of an unfinished upload as the step-by-step upload reads it: the
// size declared at its begin (-1: open), and a copy of it with that size fixed.
type ChunkInfo[P any] interface {
	NotePartial
	Declared() int64
	Sized(n int64) P
}

// ObjectChunks is the step-by-step upload's primitives (ChunkBackend) of a store that keeps an
// unfinished upload as objects, over O and the backend's calls below.
type ObjectChunks[P ChunkInfo[P]] struct {
	O     Objects
	Loc   string // the store, for messages
	Quota *Quota
	// Part is the most bytes a finish puts in one write (PutWhole); more are put by PutParts.
	Part int64
	// Exists checks the id, and that the store is there to read: upload.missing where it is not.
	Exists func(ctx context.Context, id string) error
	// List lists the objects of the partial of the unfinished upload id, its chunks among them.
	List func(ctx context.Context, id string) ([]FolderObject, error)
	// Read fills b from byte from of the object name of the partial of id (ChunkSource.Read).
	Read func(ctx context.Context, id, name string, from int64, b []byte) (int, error)
	// Info reads the finished upload id: an error while there is none.
	Info func(ctx context.Context, id string) (*Info, error)
	// Drop removes what the unfinished upload id, whose info is p, left.
	Drop func(ctx context.Context, id string, p P) error
	// PutWhole writes body as the finished upload id named name, its BLAKE3 sum, create-only;
	// PutParts writes size bytes of src so (S3: a multipart upload), and calls check with the
	// BLAKE3 of the bytes it sent before it completes. ErrObjectChanged: another finish wrote it
	// first; any other error carries its code.
	PutWhole func(ctx context.Context, id, name, sum string, body []byte) error
	PutParts func(ctx context.Context, id, name, sum string, src SourceFile, size int64, check func(sent string) error) error
}

// ChunkProperties: a chunk is one object, read whole first; whether an upload with no info is
// finished, the engine asks Info (openChunks).
func (c ObjectChunks[P]) ChunkProperties() ChunkProperties {
	return ChunkProperties{Buffer: true, Finished: c.Info}
}

func (c ObjectChunks[P]) ChunkQuota() *Quota { return c.Quota }

// OpenChunks reads the info of the unfinished upload id and lists its chunks. A finish fixes the
// size before it publishes, and removes the partial after: one whose chunks reach its size may be
// published, its removal failed. Then it is finished, and the leftover goes as the finish would
// have removed it.
func (c ObjectChunks[P]) OpenChunks(ctx context.Context, id string) (ChunkUpload, *Info, error) {
	if err := c.Exists(ctx, id); err != nil {
		return nil, nil, err
	}
	p, err := ReadInfo[P](ctx, c.O, id, c.Loc)
	if err != nil {
		return nil, nil, err
	}
	u := &objectChunkUp[P]{c: c, id: id, p: p, st: p.Of().ChunkState(p.Declared(), 0)}
	if u.st.Kind != "" { // not the step-by-step upload's: the engine refuses it
		return u, nil, nil
	}
	objs, err := c.List(ctx, id)
	if err == nil {
		u.cs, u.st.Offset, err = ChunkRun(id, objs)
	}
	if err != nil {
		return nil, nil, err
	}
	if u.st.Offset == p.Declared() {
		if info, ierr := c.Info(ctx, id); ierr == nil {
			c.Drop(ctx, id, p)
			return nil, info, fault.Errorf(fault.UploadMissing, "upload %s: finished, not unfinished", id)
		}
	}
	return u, nil, nil
}

// objectChunkUp is an unfinished upload taken up by ObjectChunks.OpenChunks.
type objectChunkUp[P ChunkInfo[P]] struct {
	c  ObjectChunks[P]
	id string
	p  P
	cs []Chunk
	st ChunkState
}

func (u *objectChunkUp[P]) State() ChunkState { return u.st }
func (u *objectChunkUp[P]) Close()            {}

// Append writes the chunk as the object at its offset, create-only (PutChunk).
func (u *objectChunkUp[P]) Append(ctx context.Context, cur int64, r io.Reader, limit int64, over func(int64) error) (int64, error) {
	c, id := u.c, u.id
	b, err := ReadChunk(id, r, limit, over)
	if err != nil {
		return cur, err
	}
	return PutChunk(ctx, c.O, id, cur, b, func() int64 {
		objs, _ := c.List(ctx, id)
		_, now, _ := ChunkRun(id, objs)
		return now
	})
}

// Drop removes what the unfinished upload left.
func (u *objectChunkUp[P]) Drop(ctx context.Context) error { return u.c.Drop(ctx, u.id, u.p) }

// Publish reads the chunks, hashes them, and writes the finished upload create-only: in one write
// of the bytes read when they fit one (Part; an empty upload among them: a multipart upload takes
// at least one part), else by PutParts of them read again, which must hash the same. An open size
// is fixed in the info first, so that a partial left after the publish is seen finished
// (OpenChunks).
func (u *objectChunkUp[P]) Publish(ctx context.Context, check func(string) error) (*Info, bool, error) {
	c, id, n := u.c, u.id, u.st.Offset
	src := ChunkSource{ID: id, Chunks: u.cs, Read: func(name string, from int64, b []byte) (int, error) {
		return c.Read(ctx, id, name, from, b)
	}}
	var body []byte
	var got string
	var err error
	if n <= c.Part {
		body = make([]byte, n)
		if _, err = src.ReadAt(body, 0); err == nil {
			sum := blake3.Sum256(body)
			got = hex.EncodeToString(sum[:])
		}
	} else {
		got, err = HashSource(ctx, src, n, c.Part, nil)
	}
	if err == nil {
		err = check(got)
	}
	if err != nil {
		return nil, false, err
	}
	if u.p.Declared() < 0 {
		if err := WriteInfo(ctx, c.O, id, u.p.Sized(n), AnyVersion); err != nil {
			return nil, false, err
		}
	}
	name := u.p.Of().Name
	if n <= c.Part {
		err = c.PutWhole(ctx, id, name, got, body)
	} else {
		err = c.PutParts(ctx, id, name, got, src, n, func(sent string) error {
			if sent != got {
				return fault.Errorf(fault.UploadUnreadable, "upload %s: its chunks read again are not those hashed", id)
			}
			return nil
		})
	}
	if err != nil && !errors.Is(err, ErrObjectChanged) {
		return nil, false, err
	}
	info, ierr := c.Info(ctx, id)
	if ierr != nil {
		return nil, false, ierr
	}
	c.Quota.Done(ctx, id)
	c.Drop(ctx, id, u.p)
	return info, err != nil, nil
}

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
