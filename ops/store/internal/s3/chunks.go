package s3

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/zeebo/blake3"
)

// The S3 store's primitives of the step-by-step upload (store.ChunkBackend): each chunk is an
// object P/.attachctl/partial/<id>/c/<offset>, written create-only (If-None-Match: *), so that of
// two writers at one offset one wins (store.PutChunk); a finish copies them into the finished key,
// create-only, read as one file (store.ChunkSource) by ranged GETs.

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

// Append writes the chunk as the object at its offset, create-only (store.PutChunk).
func (u *chunkUp) Append(ctx context.Context, cur int64, r io.Reader, limit int64, over func(int64) error) (int64, error) {
	s, id := u.s, u.id
	b, err := store.ReadChunk(id, r, limit, over)
	if err != nil {
		return cur, err
	}
	return store.PutChunk(ctx, objects{s}, id, cur, b, func() int64 {
		_, now, _ := s.chunks(ctx, id)
		return now
	})
}

// Drop removes what the unfinished upload left.
func (u *chunkUp) Drop(ctx context.Context) error { return u.s.dropPartial(ctx, u.id, u.pi) }

// Publish reads the chunks, hashes them, and writes the finished object create-only: in one put
// of the bytes read when they fit one (an empty upload among them: a multipart upload takes at
// least one part), else as a multipart upload of them read again.
func (u *chunkUp) Publish(ctx context.Context, check func(string) error) (*store.Info, bool, error) {
	s, id, n := u.s, u.id, u.st.Offset
	src := store.ChunkSource{ID: id, Chunks: u.cs, Read: func(name string, from int64, b []byte) (int, error) {
		return s.readRange(ctx, s.partialDir(id)+name, from, b)
	}}
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

// readRange fills b from byte from of the object at key, a ranged GET; an error upload.unreadable.
func (s *Store) readRange(ctx context.Context, key string, from int64, b []byte) (int, error) {
	out, err := s.client.GetObject(ctx, &awss3.GetObjectInput{Bucket: &s.Bucket, Key: &key,
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", from, from+int64(len(b))-1))})
	if err != nil {
		return 0, s.wrap(fault.UploadUnreadable, key, err)
	}
	defer out.Body.Close()
	m, err := io.ReadFull(out.Body, b)
	if err != nil {
		return m, fault.Errorf(fault.UploadUnreadable, "%s: read %d of %d bytes: %v", key, m, len(b), err)
	}
	return m, nil
}
