package s3

import (
	"context"
	"strings"

	"github.com/attachctl/attachctl/ops/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// objects is the store's small objects (store.Objects), keys from P/: GetObject; PutObject
// If-None-Match: * or If-Match the ETag, which finds its own write when its answer was lost
// (putOwn); DeleteObject, If-Match when given an ETag; a listing by prefix. An error the server
// answered that is not store.unreachable carries no code: the rules give it theirs.
type objects struct{ s *Store }

var _ store.LeaseObjects = objects{}

func (o objects) Get(ctx context.Context, key string) (store.Object, error) {
	obj, err := o.s.readObjectUpTo(ctx, o.s.key(key), 1<<20)
	switch {
	case notFound(err):
		return store.Object{}, store.ErrNoObject
	case err != nil:
		return store.Object{}, o.s.wrap("", key, err)
	}
	// not nil: an empty one is there
	return store.Object{Body: append([]byte{}, obj.body...), Version: obj.etag, Modified: obj.modified, Meta: obj.meta}, nil
}

func (o objects) Put(ctx context.Context, key, etag string, body []byte) (string, error) {
	w, err := o.PutMeta(ctx, key, etag, body, nil)
	if err != nil {
		return "", err
	}
	return w.Version, nil
}

// PutMeta makes objects store.LeaseObjects: the metadata is x-amz-meta-*.
func (o objects) PutMeta(ctx context.Context, key, etag string, body []byte, meta map[string]string) (store.Object, error) {
	in := condPut(o.s.key(key), etag)
	in.Metadata = meta
	w, err := o.s.putOwn(ctx, in, body)
	found := store.Object{Body: w.body, Version: w.etag, Modified: w.modified, Meta: w.meta}
	if conflict(err) || notFound(err) { // If-Match on an object deleted meanwhile: 404 on some servers
		return found, store.ErrObjectChanged
	}
	return found, o.s.wrap("", key, err)
}

func (o objects) Delete(ctx context.Context, key, etag string) error {
	in := &awss3.DeleteObjectInput{Bucket: &o.s.Bucket, Key: aws.String(o.s.key(key))}
	if etag != "" {
		in.IfMatch = &etag
	}
	_, err := o.s.client.DeleteObject(ctx, in)
	switch {
	case notFound(err):
		return nil
	case conflict(err):
		return store.ErrObjectChanged
	}
	return o.s.wrap("", key, err)
}

func (o objects) List(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	err := o.s.listObjects(ctx, o.s.key(prefix), func(obj types.Object) error {
		keys = append(keys, strings.TrimPrefix(aws.ToString(obj.Key), o.s.root()))
		return nil
	})
	return keys, o.s.wrap("", prefix, err)
}
