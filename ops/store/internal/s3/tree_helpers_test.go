package s3

import (
	"context"

	"github.com/attachctl/attachctl/ops/store"
)

// sendTreeFile makes the object of f (of the folder upload id) equal to the source file, the
// server holding have of it, as a folder upload does, and returns its BLAKE3.
func (s *Store) sendTreeFile(ctx context.Context, id string, src *store.TreeSource, f store.TreeFile, have heldObj, _ *[]byte) (string, error) {
	w := &treeWrite{s: s, id: id, name: src.Name, held: map[string]heldObj{f.Rel: have}}
	return store.PutTreeFile(ctx, w, src, f)
}
