package s3

import (
	"context"
	"strings"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// nested refuses a prefix that lies inside another store (store.NotNested): one with a part that
// is a store's internal folder (s3://B/P/.attachctl/partial), inside the store P whatever the
// bucket holds; and with marks, before a new store is marked (checkStore), one below a prefix
// that holds a store's mark (and so inside its uploads, PREFIX/<id>/...): one HEAD per level,
// only when a store is made.
func (s *Store) nested(ctx context.Context, marks bool) error {
	if s.Prefix == "" {
		return nil
	}
	parts := strings.Split(s.Prefix, "/")
	at := func(n int) string { return strings.TrimSuffix("s3://"+s.Bucket+"/"+strings.Join(parts[:n], "/"), "/") }
	var isStore func(n int) (bool, error)
	if marks {
		isStore = func(n int) (bool, error) {
			outer := strings.Join(parts[:n], "/")
			_, err := s.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &s.Bucket, Key: aws.String(strings.TrimPrefix(outer+"/"+internalDir+"/store", "/"))})
			if err != nil && !notFound(err) {
				return false, s.wrap(fault.StoreUnreachable, "store mark of "+outer, err)
			}
			return err == nil, nil
		}
	}
	return store.NotNested(s.URI, parts, at, isStore)
}
