// Package open opens a store by its location with the backends attachctl ships: a folder on this
// machine (the local store) and s3://BUCKET/PREFIX (any S3-compatible server). It is the public
// way in for an embedder and for the command alike; the backends themselves are internal, so
// every caller outside ops/store sees only store.Backend and the Features it declares.
//
// It is a package of its own, not part of ops/store/location: the location registry is the
// mechanism (a scheme and its factory) and imports no backend, so that a program with a backend
// of its own can use it without linking the S3 client; this package is the policy that wires
// attachctl's two backends into it, once, from typed options.
package open

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/internal/local"
	"github.com/attachctl/attachctl/ops/store/internal/s3"
	"github.com/attachctl/attachctl/ops/store/location"
)

// Options are the options of every store this package opens. The zero value is the command's
// defaults.
type Options struct {
	// LimitsWait is how long an upload waits for the store's limits lock, held while another
	// upload is checked against the store's limits, before it is store.locked (0:
	// store.DefaultLimitsWait). Both backends take it.
	LimitsWait time.Duration
	// S3 are the options of s3:// stores only.
	S3 S3Options
}

// S3Options are the options of an S3 store (the command's --s3-* flags): location.S3Options,
// where the rules of an s3:// location are written.
type S3Options = location.S3Options

// The S3 timeouts unless told: with the standard three attempts, a server that accepts a
// connection and never answers is store.unreachable in under a minute. Written out, not
// location's names, so that the documentation shows them (TestConstantsAreTheLocations').
const (
	DefaultS3ConnectTimeout = 10 * time.Second
	DefaultS3ReadTimeout    = 15 * time.Second
)

// ParseS3Timeout reads --s3-connect-timeout and --s3-read-timeout as an s3:// location reads
// their variables: Go's syntax (30s, 2m), or seconds; false when neither, or not above zero.
func ParseS3Timeout(v string) (time.Duration, bool) { return location.ParseTimeout(v) }

// Registry returns a location registry with both backends registered, opening with o. A caller
// with a backend of its own registers it too (another scheme), or replaces one of these.
func Registry(o Options) *location.Registry {
	r := location.NewRegistry()
	r.Register(location.Factory{Scheme: "", Open: func(_ context.Context, dir string) (store.Backend, error) {
		return local.New(dir, local.LimitsWait(o.LimitsWait))
	}})
	r.Register(location.Factory{Scheme: "s3", Open: func(ctx context.Context, uri string) (store.Backend, error) {
		loc, err := location.ParseS3(uri, o.S3)
		if err != nil {
			return nil, err
		}
		loc.LimitsWait = o.LimitsWait
		return s3.Open(ctx, loc)
	}})
	return r
}

// Store opens the store at loc: a folder (made absolute), or s3://BUCKET/PREFIX. Nothing is read
// or written yet: the backend judges the location at its first call, and only an upload makes a
// store. Another scheme is upload.invalid. On Windows a folder is refused here already (the
// local store's guarantees rest on POSIX calls); an s3:// store opens there.
func Store(ctx context.Context, loc string, o Options) (store.Backend, error) {
	return Registry(o).Open(ctx, loc)
}

// ForCheck opens a path named by a b3sum line (verify --check) for hashing. A path that is a
// file of a finished upload of a folder store (STORE/<id>/<name>, or STORE/<id>/<name>/<rel> in a
// folder upload) is opened only through the store's guarded open: a symlink, a FIFO or a hard link there fails with upload.unreadable and nothing
// blocks. Any other path is opened as b3sum would (a symlink named is followed) but without
// blocking, and must be a regular file (file.notRegular otherwise).
func ForCheck(path string) (io.ReadCloser, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fault.Errorf(fault.FileUnreadable, "%s: %v", path, err)
	}
	if f, ok, err := local.OpenUploadPath(abs); err != nil {
		return nil, err // not a nil *os.File in a non-nil interface
	} else if ok {
		return f, nil
	}
	// Any other path: as sniff opens a record's file, following a symlink, never blocking (the
	// flags that do not apply are ignored where they are not, as on Windows).
	f, err := os.OpenFile(abs, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		code := fault.FileUnreadable
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			code = fault.FileMissing
		}
		return nil, fault.Errorf(code, "%s: %w", abs, errors.Unwrap(err))
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
		err = fault.Errorf(fault.FileUnreadable, "%s: %w", abs, errors.Unwrap(err))
	case fi.IsDir():
		err = fault.Errorf(fault.FileUnreadable, "%s: is a directory", abs)
	case !fi.Mode().IsRegular():
		err = fault.Errorf(fault.FileNotRegular, "%s: is not a regular file; not read", abs)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// StoresUnder finds every folder store below root (root itself included), for
// `sweep --stores-under`: by the store's mark, never descending into a store, following no link
// (root itself excepted) and staying on root's file system. What it cannot read is returned in
// skipped, named with why, and does not stop it. Stores come in lexical order of their paths.
func StoresUnder(root string) (stores []string, skipped []store.Skip, err error) {
	return store.StoresUnder(root, local.UnderRoot)
}

// The modes a folder store gives its folders, the files of an unfinished upload, and a finished
// upload's files (docs/store.md): what a repair of a store's modes restores. Written out, as the
// timeouts are.
const (
	DirMode      os.FileMode = 0o700
	FileMode     os.FileMode = 0o600
	ReadOnlyMode os.FileMode = 0o400
)
