package s3

import (
	"context"

	"github.com/attachctl/attachctl/ops/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// The sweep lock names its holder (pid, host, since when) in its metadata, so that a sweep or rm
// that cannot have it says who has it; the body keeps its one line, the lease, which earlier
// versions read.
const holderKey = "holder"

func holderMeta(h store.Holder) map[string]string { return map[string]string{holderKey: h.String()} }

// lockHolder reads the holder the lock object key (the sweep lock, the limits lock) names; known
// is false when it names none (a lock of an earlier version) or cannot be read.
func (s *Store) lockHolder(ctx context.Context, key string) (h store.Holder, known bool) {
	out, err := s.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &s.Bucket, Key: aws.String(key)})
	if err != nil {
		return h, false
	}
	return store.ParseHolder(out.Metadata[holderKey])
}
