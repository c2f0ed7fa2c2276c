package s3

import (
	"context"
	"strings"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// nestedName refuses a prefix with a part that is a store's internal folder
// (s3://B/P/.attachctl/partial): it is inside the store P whatever the bucket holds.
func (s *Store) nestedName() error {
	parts := strings.Split(s.Prefix, "/")
	for i, part := range parts {
		if part == internalDir {
			return s.nestedErr("s3://"+s.Bucket+"/"+strings.Join(parts[:i], "/"), "inside the internal folder of the store")
		}
	}
	return nil
}

// notNested refuses, before a new store is marked, a prefix that lies inside another store (and
// so inside its uploads, PREFIX/<id>/...): one of the prefixes above it holds a store's mark. One
// HEAD per level, only when a store is made.
func (s *Store) notNested(ctx context.Context) error {
	if err := s.nestedName(); err != nil {
		return err
	}
	if s.Prefix == "" {
		return nil
	}
	parts := strings.Split(s.Prefix, "/")
	for i := len(parts) - 1; i >= 0; i-- {
		outer := strings.Join(parts[:i], "/")
		key := internalDir + "/store"
		if outer != "" {
			key = outer + "/" + key
		}
		_, err := s.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &s.Bucket, Key: aws.String(key)})
		if err == nil {
			return s.nestedErr(strings.TrimSuffix("s3://"+s.Bucket+"/"+outer, "/"), "inside the store")
		}
		if !notFound(err) {
			return s.wrap(fault.StoreUnreachable, "store mark of "+outer, err)
		}
	}
	return nil
}

func (s *Store) nestedErr(outer, why string) error { return store.Nested(s.URI, why, outer) }
