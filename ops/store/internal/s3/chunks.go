package s3

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"sort"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/zeebo/blake3"
)

// The S3 store's primitives of the step-by-step upload (store.ChunkBackend): each chunk is an
// object P/.attachctl/partial/<id>/c/<offset>, written create-only (If-None-Match: *), so that of
// two writers at one offset one wins; a finish copies them into the finished key, create-only.

// ChunkProperties: a chunk is one object, read whole first.
func (s *Store) ChunkProperties() store.ChunkProperties { return store.ChunkProperties{Buffer: true} }

// OpenChunks reads the unfinished upload id and lists its chunks.
func (s *Store) OpenChunks(ctx context.Context, id string) (store.ChunkUpload, *store.Info, error) {
	if err := s.exists(ctx, id); err != nil {
		return nil, nil, err
	}
	pi, err := s.readInfo(ctx, id)
	if err != nil {
		if fault.CodeOf(err) == fault.UploadMissing {
			if info, ierr := s.Info(ctx, id); ierr == nil {
				return nil, info, err
			}
		}
		return nil, nil, err
	}
	st := pi.Of().ChunkState(pi.Size, 0) // the offset is its chunks', listed below
	u := &chunkUp{s: s, id: id, pi: pi, st: st}
	if st.Kind == "" {
		if u.cs, u.st.Offset, err = s.chunks(ctx, id); err != nil {
			return nil, nil, err
		}
		// A finish fixes the size before it publishes, and removes the partial after: one at
		// its size may be published, its removal failed. Then it is finished, and the leftover
		// goes as the finish would have removed it.
		if u.st.Offset == pi.Size {
			if info, ierr := s.Info(ctx, id); ierr == nil {
				s.dropPartial(ctx, id, pi)
				return nil, info, fault.Errorf(fault.UploadMissing, "upload %s: finished, not unfinished", id)
			}
		}
	}
	return u, nil, nil
}

func (s *Store) ChunkQuota() *store.Quota { return s.quota }

type chunkUp struct {
	s  *Store
	id string
	pi *partialInfo
	cs []store.Chunk
	st store.ChunkState
}

func (u *chunkUp) State() store.ChunkState { return u.st }
func (u *chunkUp) Close()                  {}

// Append writes the chunk as the object at its offset, create-only.
func (u *chunkUp) Append(ctx context.Context, cur int64, r io.Reader, limit int64, over func(int64) error) (int64, error) {
	s, id := u.s, u.id
	b, err := store.ReadChunk(id, r, limit, over)
	if err != nil {
		return cur, err
	}
	// A refusal that finds these bytes at cur is this write, its answer lost (putOwn).
	_, err = s.putOwn(ctx, &awss3.PutObjectInput{Key: aws.String(s.chunkKey(id, cur)), IfNoneMatch: aws.String("*")}, b)
	if conflict(err) {
		_, now, _ := s.chunks(ctx, id)
		return now, fault.Errorf(fault.UploadOffset, "upload %s: another writer took offset %d; the current offset is %d", id, cur, now)
	}
	if err != nil {
		return cur, s.wrap(fault.UploadUnreadable, "upload "+id, err)
	}
	return cur + int64(len(b)), nil
}

// Drop removes what the unfinished upload left.
func (u *chunkUp) Drop(ctx context.Context) error { return u.s.dropPartial(ctx, u.id, u.pi) }

// Publish reads the chunks, hashes them, and writes the finished object create-only: in one put
// of the bytes read when they fit one (an empty upload among them: a multipart upload takes at
// least one part), else as a multipart upload of them read again.
func (u *chunkUp) Publish(ctx context.Context, check func(string) error) (*store.Info, bool, error) {
	s, id, n := u.s, u.id, u.st.Offset
	src := chunkSource{ctx: ctx, s: s, id: id, cs: u.cs}
	var body []byte
	var got string
	var err error
	if n <= DefaultChunk {
		body = make([]byte, n)
		if _, err = src.ReadAt(body, 0); err == nil {
			sum := blake3.Sum256(body)
			got = hex.EncodeToString(sum[:])
		}
	} else {
		got, err = store.HashSource(ctx, src, n, DefaultChunk, nil)
	}
	if err == nil {
		err = check(got)
	}
	if err != nil {
		return nil, false, err
	}
	if u.pi.Size < 0 { // fixed here, so that a partial left after the publish is seen finished
		fixed := *u.pi
		fixed.Size = n
		if err := store.WriteInfo(ctx, objects{s}, id, fixed, store.AnyVersion); err != nil {
			return nil, false, err
		}
	}
	key := s.FinishedKey(id, u.pi.Name)
	if n <= DefaultChunk {
		_, err = s.client.PutObject(ctx, &awss3.PutObjectInput{Bucket: &s.Bucket, Key: &key, Body: bytes.NewReader(body),
			Metadata: map[string]string{"blake3": got}, IfNoneMatch: aws.String("*")})
	} else {
		err = s.putMultipart(ctx, key, got, src, n, true, func(sent string) error {
			if sent != got {
				return fault.Errorf(fault.UploadUnreadable, "upload %s: its chunks read again are not those hashed", id)
			}
			return nil
		})
	}
	if err != nil && !conflict(err) {
		return nil, false, s.wrap(fault.UploadUnreadable, "finish "+id, err)
	}
	info, ierr := s.Info(ctx, id)
	if ierr != nil {
		return nil, false, ierr
	}
	s.quota.Done(ctx, id)
	s.dropPartial(ctx, id, u.pi)
	return info, err != nil, nil
}

// chunkSource is the chunks of an upload read as one file (store.SourceFile): a read is a ranged
// GET of each chunk it spans, an error upload.unreadable.
type chunkSource struct {
	ctx context.Context
	s   *Store
	id  string
	cs  []store.Chunk
}

func (c chunkSource) Name() string     { return "upload " + c.id }
func (c chunkSource) Unchanged() error { return nil }

func (c chunkSource) ReadAt(b []byte, off int64) (int, error) {
	n := 0
	for i := sort.Search(len(c.cs), func(i int) bool { return c.cs[i].Off+c.cs[i].Size > off }); n < len(b) && i < len(c.cs); i++ {
		ch, key := c.cs[i], c.s.partialDir(c.id)+c.cs[i].Name
		from := off + int64(n) - ch.Off
		k := min(int64(len(b)-n), ch.Size-from)
		out, err := c.s.client.GetObject(c.ctx, &awss3.GetObjectInput{Bucket: &c.s.Bucket, Key: &key,
			Range: aws.String(fmt.Sprintf("bytes=%d-%d", from, from+k-1))})
		if err != nil {
			return n, c.s.wrap(fault.UploadUnreadable, key, err)
		}
		m, err := io.ReadFull(out.Body, b[n:n+int(k)])
		out.Body.Close()
		if n += m; err != nil {
			return n, fault.Errorf(fault.UploadUnreadable, "%s: read %d of %d bytes: %v", key, m, k, err)
		}
	}
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}
