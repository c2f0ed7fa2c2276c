package s3

import (
	"context"

	"github.com/attachctl/attachctl/ops"
)

// Uploads is `ls` of the S3 store, in the form the local store gives it: every upload, finished
// ones with the BLAKE3 of their metadata (a HEAD each, a few at once), unfinished ones with the
// bytes their parts or chunks hold. Path is the object's s3:// URI (unfinished: where it will be).
func (s *Store) Uploads(ctx context.Context) ([]ops.Listed, error) {
	l, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ops.Listed, len(l.Entries))
	err = forEach(ctx, len(l.Entries), func(i int) error {
		e := l.Entries[i]
		out[i] = ops.Listed{ID: e.ID, Name: e.Name, Size: e.Size, Made: e.Made, LastUsed: e.LastUsed,
			Finished: e.Finished, Path: s.FinishedURI(e.ID, e.Name)}
		if e.Finished {
			info, err := s.head(ctx, e.ID, e.Name)
			if err != nil {
				out[i].Err = err
				return nil
			}
			out[i].Blake3 = info.Blake3
		}
		return nil
	})
	return out, err
}
