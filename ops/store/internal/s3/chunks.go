package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// The S3 store's primitives of the step-by-step upload (store.ObjectChunks): each chunk is an
// object P/.attachctl/partial/<id>/c/<offset>, written create-only (If-None-Match: *), so that of
// two writers at one offset one wins (store.PutChunk); a finish copies them into the finished key,
// create-only, read as one file (store.ChunkSource) by ranged GETs: a put of them whole, or a
// multipart upload of parts of DefaultChunk.
func (s *Store) stepChunks() store.ObjectChunks[*partialInfo] {
	return store.ObjectChunks[*partialInfo]{O: objects{s}, Loc: s.URI, Quota: s.quota, Part: DefaultChunk,
		Exists: s.exists, Info: s.Info, Drop: s.dropPartial,
		List: s.up.WalkPartial,
		Read: func(ctx context.Context, id, name string, from int64, b []byte) (int, error) {
			return s.readRange(ctx, s.partialDir(id)+name, from, b)
		},
		PutWhole: func(ctx context.Context, id, name, sum string, body []byte) error {
			_, err := s.client.PutObject(ctx, &awss3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String(s.FinishedKey(id, name)),
				Body: bytes.NewReader(body), Metadata: map[string]string{"blake3": sum}, IfNoneMatch: aws.String("*")})
			return s.finishErr(id, err)
		},
		PutParts: func(ctx context.Context, id, name, sum string, src store.SourceFile, size int64, check func(string) error) error {
			return s.finishErr(id, s.putMultipart(ctx, s.FinishedKey(id, name), sum, src, size, true, check))
		}}
}

// finishErr is the error of a finish's create-only write: another's write first is
// store.ErrObjectChanged.
func (s *Store) finishErr(id string, err error) error {
	if conflict(err) || errors.Is(err, store.ErrObjectChanged) {
		return store.ErrObjectChanged
	}
	return s.wrap(fault.UploadUnreadable, "finish "+id, err)
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
