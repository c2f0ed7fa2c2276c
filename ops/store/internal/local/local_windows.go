package local

import (
	"os"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// On Windows the local store is refused, at New: docs/store.md ("Platforms") says why.

// New refuses: the local store needs a POSIX system.
func New(dir string, opts ...Option) (store.Backend, error) { return nil, errNoPOSIX("store " + dir) }

// UnderRoot refuses, as New does: there is no local store to find (store.StoresUnder).
func UnderRoot(abs string) (store.UnderFolder, error) {
	return nil, errNoPOSIX("stores under " + abs)
}

// errNoPOSIX is store.unreachable for the local store (or stores) at where.
func errNoPOSIX(where string) error {
	return fault.Errorf(fault.StoreUnreachable,
		"%s: the local store needs a POSIX system (Linux, macOS or FreeBSD: its guarded opens, locks and renames have no same form on Windows); use an s3:// store", where)
}

// OpenUploadPath: on Windows no local store is there to guard, and abs is opened as any file.
func OpenUploadPath(abs string) (*os.File, bool, error) { return nil, false, nil }
