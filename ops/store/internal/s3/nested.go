package s3

import (
	"context"
	"slices"
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
	if i := slices.Index(parts, internalDir); i >= 0 {
		return store.Nested(s.URI, "inside the internal folder of the store", "s3://"+s.Bucket+"/"+strings.Join(parts[:i], "/"))
	}
	return nil
}

// notNested refuses, before a new store is marked (checkStore, which has refused a nestedName
// already), a prefix that lies inside another store (and so inside its uploads, PREFIX/<id>/...):
// one of the prefixes above it holds a store's mark. One HEAD per level, only when a store is made.
func (s *Store) notNested(ctx context.Context) error {
	if s.Prefix == "" {
		return nil
	}
	parts := strings.Split(s.Prefix, "/")
	for i := len(parts) - 1; i >= 0; i-- {
		outer := strings.Join(parts[:i], "/")
		_, err := s.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &s.Bucket, Key: aws.String(strings.TrimPrefix(outer+"/"+internalDir+"/store", "/"))})
		if err == nil {
			return store.Nested(s.URI, "inside the store", strings.TrimSuffix("s3://"+s.Bucket+"/"+outer, "/"))
		}
		if !notFound(err) {
			return s.wrap(fault.StoreUnreachable, "store mark of "+outer, err)
		}
	}
	return nil
}
