package sweep

import (
	"context"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// CopyDoomed is the rule of which working copies (resolve's --workdir folders, one per upload id)
// go with a sweep or an rm, as a predicate on upload ids: the copy of an upload the run removed
// (removed), and, after a sweep (gone true; rm removes only what it was named), the copy of an
// upload the store no longer holds. An upload is no longer held when the listing taken now, after
// the removals, has no finished upload of that id, and a last look at it (Info) when asked finds
// none either: an upload finished, and resolved, between the listing and the question keeps its
// copy. A listing that fails is the error, and nothing is doomed.
func CopyDoomed(ctx context.Context, b store.Backend, removed map[string]bool, gone bool) (func(id string) bool, error) {
	if !gone {
		return func(id string) bool { return removed[id] }, nil
	}
	l, err := b.List(ctx)
	if err != nil {
		return nil, err
	}
	finished := map[string]bool{}
	for _, e := range l.Entries {
		if e.Finished {
			finished[e.ID] = true
		}
	}
	return func(id string) bool {
		if removed[id] {
			return true
		}
		if finished[id] {
			return false
		}
		_, err := b.Info(ctx, id)
		return fault.CodeOf(err) == fault.UploadMissing
	}, nil
}
