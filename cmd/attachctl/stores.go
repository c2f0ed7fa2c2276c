package main

// The one file of the command that knows the backends: it registers each with the location
// registry (a scheme and its factory) and hands the rest of the command what only a backend can
// say. Every other file opens a store with openStore and sees store.Backend and the seam's
// optional interfaces only (.ci/run checks it).

import (
	"context"
	"io"
	"os"

	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/local"
	"github.com/attachctl/attachctl/ops/store/location"
	"github.com/attachctl/attachctl/ops/store/s3"
	"github.com/urfave/cli/v2"
)

// storeFlags are the global flags of the backends.
func storeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "s3-path-style", EnvVars: []string{"ATTACHCTL_S3_PATH_STYLE"},
			Usage: "address S3 buckets in the path (http://host/bucket/key), as most servers other than AWS need"},
	}
}

// registry is the location registry with every backend, their options read from c's flags.
func registry(c *cli.Context) *location.Registry {
	r := location.NewRegistry()
	r.Register(location.Factory{Scheme: "", Open: func(_ context.Context, dir string) (store.Backend, error) {
		return local.NewLocal(dir), nil
	}})
	r.Register(location.Factory{Scheme: "s3", Open: func(ctx context.Context, uri string) (store.Backend, error) {
		return s3.Open(ctx, uri, s3.Options{PathStyle: globalBool(c, "s3-path-style")})
	}})
	return r
}

// openStore opens the store at loc (a folder or a URI) through the registry. Nothing is read or
// written yet: the backend judges the location at its first call.
func openStore(c *cli.Context, loc string) (store.Backend, error) {
	return registry(c).Open(c.Context, loc)
}

// openForCheck opens a path named by a b3sum line (verify --check): a finished upload of a local
// store only through its guarded open.
func openForCheck(path string) (io.ReadCloser, error) { return local.OpenForCheck(path) }

// The modes the local store gives its folders and files, for verify --format text's chmod hint.
const (
	storeDirMode  os.FileMode = local.DirMode
	storeFileMode os.FileMode = local.FileMode
)
