package s3

import (
	"context"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops/stage"
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
		s.sent = opts.Sent
	}
	u, err := stage.NewUploader(s, stage.Options{Chunk: opts.Chunk, Jobs: opts.Jobs, Progress: opts.Progress})
	if err != nil {
		return err
	}
	return u.Upload(ctx, rec, nil)
}
