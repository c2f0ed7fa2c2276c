package stage

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops/store"
)

// Touch marks the upload rec names used at at (RecordID says which records name one of b).
func Touch(ctx context.Context, b store.Backend, rec *manifest.Record, at time.Time) error {
	id, err := RecordID(b, rec)
	if err != nil {
		return err
	}
	return b.MarkUsed(ctx, []string{id}, at)
}

// sameLocation compares a record's upload.store with a backend's location: a folder cleaned,
// a URI as it is.
func sameLocation(a, b string) bool {
	if strings.Contains(a, "://") || strings.Contains(b, "://") {
		return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
	}
	return filepath.Clean(a) == filepath.Clean(b)
}
