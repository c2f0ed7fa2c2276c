package s3

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/location"
	"github.com/attachctl/attachctl/ops/store/storetest"
	"github.com/attachctl/attachctl/ops/store/storetest/s3test"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

var prefixes atomic.Int64

// Options are an s3:// location's options, which the tests open stores with.
type Options = location.S3Options

// openURI opens the store at uri as ops/store/open does: its location read with o.
func openURI(ctx context.Context, uri string, o Options) (*Store, error) {
	loc, err := location.ParseS3(uri, o)
	if err != nil {
		return nil, err
	}
	return Open(ctx, loc)
}

// newStore opens a fresh prefix of srv's bucket.
func newStore(t testing.TB, srv *s3test.Server) *Store {
	t.Helper()
	srv.Setenv(t)
	s, err := openURI(context.Background(), srv.URI(fmt.Sprintf("t%d/chat", prefixes.Add(1))), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	srv := s3test.Start(t)
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) store.Backend { return newStore(t, srv) },
		NotStore: func(t *testing.T) store.Backend {
			s := newStore(t, srv)
			_, err := s.client.PutObject(context.Background(), &awss3.PutObjectInput{Bucket: &s.Bucket,
				Key: aws.String(s.key("notes.txt")), Body: strings.NewReader("not a store")})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		Exists: func(t *testing.T, b store.Backend) bool {
			s := b.(*Store)
			out, err := s.client.ListObjectsV2(context.Background(), &awss3.ListObjectsV2Input{Bucket: &s.Bucket, Prefix: aws.String(s.root()), MaxKeys: aws.Int32(1)})
			if err != nil {
				t.Fatal(err)
			}
			return len(out.Contents) > 0
		},
		Chunks:   func(t *testing.T, b store.Backend) store.ChunkBackend { return b.(*Store).stepChunks() },
		Reserver: func(t *testing.T, b store.Backend) store.Reserver { return b.(*Store).quota.R },
		RemoveFromUpload: func(t *testing.T, b store.Backend, id, rel string) {
			s := b.(*Store)
			at := s.key(id, rel)
			out, err := s.client.ListObjectsV2(context.Background(), &awss3.ListObjectsV2Input{Bucket: &s.Bucket, Prefix: &at})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range out.Contents {
				if k := aws.ToString(o.Key); k == at || strings.HasPrefix(k, at+"/") {
					if _, err := s.client.DeleteObject(context.Background(), &awss3.DeleteObjectInput{Bucket: &s.Bucket, Key: o.Key}); err != nil {
						t.Fatal(err)
					}
				}
			}
		},
		RemovePartialInfo: func(t *testing.T, b store.Backend, id string) {
			s := b.(*Store)
			if _, err := s.client.DeleteObject(context.Background(), &awss3.DeleteObjectInput{Bucket: &s.Bucket, Key: aws.String(s.infoKey(id))}); err != nil {
				t.Fatal(err)
			}
		},
		PlantMarker: func(t *testing.T, b store.Backend, id string) {
			if _, err := store.WriteUseMark(context.Background(), objects{b.(*Store)}, id, store.UseMark{}, "used", time.Now(), store.ErrUseRaced); err != nil {
				t.Fatal(err)
			}
		},
		PlantForeignMarker: func(t *testing.T, b store.Backend, id string) {
			s := b.(*Store)
			if _, err := s.client.PutObject(context.Background(), &awss3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String(s.key(id, store.UsedName)),
				Body: strings.NewReader("touched by hand\n")}); err != nil {
				t.Fatal(err)
			}
		},
		EditTreeFile: func(t *testing.T, b store.Backend, id, name, rel string, data []byte) {
			s := b.(*Store)
			key := s.treeFileKey(id, name, rel)
			var err error
			if data == nil {
				_, err = s.client.DeleteObject(context.Background(), &awss3.DeleteObjectInput{Bucket: &s.Bucket, Key: &key})
			} else {
				_, err = s.client.PutObject(context.Background(), &awss3.PutObjectInput{Bucket: &s.Bucket, Key: &key, Body: bytes.NewReader(data)})
			}
			if err != nil {
				t.Fatal(err)
			}
		},
	})
}
