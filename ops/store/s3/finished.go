package s3

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// finishedName finds the name of the finished upload id: the one object of P/<id>/ that is not
// the marker. "" when there is none.
func (s *Store) finishedName(ctx context.Context, id string) (string, error) {
	prefix := s.key(id) + "/"
	name := ""
	err := s.listObjects(ctx, prefix, func(o types.Object) error {
		n := strings.TrimPrefix(aws.ToString(o.Key), prefix)
		if n != UsedName && store.ValidName(n) == nil && name == "" {
			name = n
		}
		return nil
	})
	if err != nil {
		return "", s.wrap(manifest.UploadUnreadable, "upload "+id, err)
	}
	return name, nil
}

func (s *Store) missing(id string) error {
	return manifest.Errorf(manifest.UploadMissing, "upload %s: not a finished upload in store %s", id, s.URI)
}

// Info reads a finished upload's metadata (one listing and one HEAD).
func (s *Store) Info(ctx context.Context, id string) (*store.Info, error) {
	if err := store.ValidID(id); err != nil {
		return nil, err
	}
	if err := s.exists(ctx, id); err != nil {
		return nil, err
	}
	name, err := s.finishedName(ctx, id)
	if err != nil {
		return nil, err
	}
	if name == "" {
		return nil, s.missing(id)
	}
	return s.head(ctx, id, name)
}

func (s *Store) head(ctx context.Context, id, name string) (*store.Info, error) {
	out, err := s.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &s.Bucket, Key: aws.String(s.FinishedKey(id, name))})
	if err != nil {
		if notFound(err) {
			return nil, s.missing(id)
		}
		return nil, s.wrap(manifest.UploadUnreadable, "upload "+id, err)
	}
	return s.infoOf(id, name, aws.ToInt64(out.ContentLength), out.Metadata, out.LastModified)
}

func (s *Store) infoOf(id, name string, size int64, meta map[string]string, modified *time.Time) (*store.Info, error) {
	sum := meta["blake3"]
	if _, err := store.CheckHex(sum); err != nil || sum == "" {
		return nil, manifest.Errorf(manifest.UploadUnreadable, "upload %s: %s carries no BLAKE3 in its metadata", id, s.FinishedKey(id, name))
	}
	return &store.Info{ID: id, Name: name, Size: size, Blake3: sum, Made: aws.ToTime(modified).UTC()}, nil
}

// Open opens a finished upload for reading: a streamed GET, and ranged GETs for ReadAt.
func (s *Store) Open(ctx context.Context, id, name string) (store.Reader, error) {
	if err := store.ValidID(id); err != nil {
		return nil, err
	}
	if err := store.ValidName(name); err != nil {
		return nil, err
	}
	if err := s.exists(ctx, id); err != nil {
		return nil, err
	}
	key := s.FinishedKey(id, name)
	out, err := s.client.GetObject(ctx, &awss3.GetObjectInput{Bucket: &s.Bucket, Key: &key})
	if err != nil {
		if notFound(err) {
			return nil, s.missing(id)
		}
		return nil, s.wrap(manifest.UploadUnreadable, "upload "+id, err)
	}
	info, err := s.infoOf(id, name, aws.ToInt64(out.ContentLength), out.Metadata, out.LastModified)
	if err != nil {
		out.Body.Close()
		return nil, err
	}
	return &reader{s: s, ctx: ctx, key: key, etag: aws.ToString(out.ETag), body: out.Body, info: info}, nil
}

type reader struct {
	s    *Store
	ctx  context.Context
	key  string
	etag string
	body io.ReadCloser
	info *store.Info
}

func (r *reader) Info() *store.Info { return r.info }
func (r *reader) Close() error      { return r.body.Close() }

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.body.Read(p)
	if err != nil && err != io.EOF {
		err = manifest.Errorf(manifest.UploadUnreadable, "upload %s: reading %s: %v", r.info.ID, r.key, err)
	}
	return n, err
}

// ReadAt is a ranged GET of the same object (If-Match its ETag, so a replaced object is not mixed in).
func (r *reader) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.info.Size {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	end := min(off+int64(len(p)), r.info.Size) - 1
	out, err := r.s.client.GetObject(r.ctx, &awss3.GetObjectInput{Bucket: &r.s.Bucket, Key: &r.key,
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, end)), IfMatch: aws.String(r.etag)})
	if err != nil {
		return 0, r.s.wrap(manifest.UploadUnreadable, "upload "+r.info.ID, err)
	}
	defer out.Body.Close()
	n, err := io.ReadFull(out.Body, p[:end-off+1])
	if err != nil {
		return n, manifest.Errorf(manifest.UploadUnreadable, "upload %s: reading %s: %v", r.info.ID, r.key, err)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
