package local

import (
	"errors"
	"os"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// On Windows the local store is refused, at New: docs/store.md ("Platforms") says why.

// New refuses: the local store needs a POSIX system.
func New(dir string, opts ...Option) (store.Backend, error) { return nil, errNoPOSIX("store " + dir) }

// StoresUnder refuses, as New does: there is no local store to find.
func StoresUnder(root string) ([]string, []store.Skip, error) {
	return nil, nil, errNoPOSIX("stores under " + root)
}

// errNoPOSIX is store.unreachable for the local store (or stores) at where.
func errNoPOSIX(where string) error {
	return fault.Errorf(fault.StoreUnreachable,
		"%s: the local store needs a POSIX system (Linux, macOS or FreeBSD: its guarded opens, locks and renames have no same form on Windows); use an s3:// store", where)
}

// OpenForCheck opens a path named by a b3sum line (verify --check): on Windows, as any file, since
// no local store is there to guard.
func OpenForCheck(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		code := fault.FileUnreadable
		if errors.Is(err, os.ErrNotExist) {
			code = fault.FileMissing
		}
		return nil, fault.Errorf(code, "%v", err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fault.Errorf(fault.FileNotRegular, "%s: not a regular file", path)
	}
	return f, nil
}
