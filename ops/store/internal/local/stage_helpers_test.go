//go:build unix

package local

import (
	"context"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops/stage"
	"github.com/attachctl/attachctl/ops/store"
)

// The local store's tests run the stages above the seam (ops/stage) over it, as the command does;
// these helpers keep their calls short.

// UploadOptions are the upload stage's options as these tests give them.
type UploadOptions struct {
	Chunk    int
	Progress func(int64)
	Observe  func([]byte)
	Batch    *groupBatch
}

// UploadRecord is the upload stage over s for one record.
func (s *localStore) UploadRecord(ctx context.Context, rec *manifest.Record, opts UploadOptions) error {
	o := stage.Options{Chunk: int64(opts.Chunk), Progress: opts.Progress}
	if opts.Batch != nil {
		o.Batch = opts.Batch
	}
	u, err := stage.NewUploader(s, o)
	if err != nil {
		return err
	}
	return u.Upload(ctx, rec, opts.Observe)
}

// VerifyRecord is verify of one record over s.
func (s *localStore) VerifyRecord(rec *manifest.Record, progress func(int64)) error {
	return stage.VerifyRecord(context.Background(), s, rec, progress)
}

// VerifyUpload is verify of one upload id over s.
func (s *localStore) VerifyUpload(id string, progress func(int64)) (*manifest.Record, error) {
	return stage.VerifyID(context.Background(), s, id, progress)
}

var _ store.Batch = (*groupBatch)(nil)
