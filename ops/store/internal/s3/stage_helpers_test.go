package s3

import (
	"context"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops/stage"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
)

// The S3 store's tests run the upload stage above the seam (ops/stage) over it, as the command
// does; this helper keeps their calls short.

// UploadOptions are the upload stage's options as these tests give them.
type UploadOptions struct {
	Chunk    int64
	Jobs     int
	Progress func(int64)
	Sent     func(n int32) // a part about to be sent
}

// UploadRecord is the upload stage over s for one record.
func (s *Store) UploadRecord(ctx context.Context, rec *manifest.Record, opts UploadOptions) error {
	if opts.Sent != nil {
		partSends(s, opts.Sent)
	}
	u, err := stage.NewUploader(s, stage.Options{Chunk: opts.Chunk, Jobs: opts.Jobs, Progress: opts.Progress})
	if err != nil {
		return err
	}
	return u.Upload(ctx, rec, nil)
}

// partSends makes s call sent with each part's number as it is about to be sent (once per
// UploadPart call, before the SDK's retries). Set again, the last sent replaces the one before.
func partSends(s *Store, sent func(n int32)) {
	s.client = awss3.New(s.client.Options(), func(o *awss3.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			st.Initialize.Remove("partSends")
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("partSends", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if p, ok := in.Parameters.(*awss3.UploadPartInput); ok {
					sent(aws.ToInt32(p.PartNumber))
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
		})
	})
}

// lockKey is the object of the lease tag (store.LeaseKey).
func (s *Store) lockKey(tag string) string { return s.key(store.LeaseKey(tag)) }

// getObject reads a small object whole; the ETag comes back too.
func (s *Store) getObject(ctx context.Context, key string) ([]byte, string, time.Time, error) {
	o, err := s.readObjectUpTo(ctx, key, 1<<20)
	return o.body, o.etag, o.modified, err
}
