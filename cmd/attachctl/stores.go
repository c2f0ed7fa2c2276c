package main

// The one file of the command that knows the backends: it registers each with the location
// registry (a scheme and its factory) and hands the rest of the command what only a backend can
// say. Every other file opens a store with openStore and sees store.Backend and the seam's
// optional interfaces only (TestOnlyStoresImportsBackends checks it).

import (
	"context"
	"io"
	"os"
	"time"

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
		&cli.StringFlag{Name: "s3-connect-timeout", EnvVars: []string{"ATTACHCTL_S3_CONNECT_TIMEOUT"},
			Usage: "give up making a connection to the S3 server after `DURATION` (default 10s)"},
		&cli.StringFlag{Name: "s3-read-timeout", EnvVars: []string{"ATTACHCTL_S3_READ_TIMEOUT"},
			Usage: "give up on an S3 request when no byte moves for `DURATION` (default 15s); with AWS_MAX_ATTEMPTS (default 3) tries, a silent server is store.unreachable within a minute"},
		&cli.BoolFlag{Name: "s3-unsafe-no-conditional", EnvVars: []string{"ATTACHCTL_S3_UNSAFE_NO_CONDITIONAL"},
			Usage: "UNSAFE: use an S3 server that ignores If-None-Match and If-Match (refused otherwise); two uploads, or a use racing a sweep, can then lose data"},
	}
}

// backendOptions are the backends' global flags, read once (backendFlags).
type backendOptions struct {
	s3 s3.Options
}

// checkStoreFlags refuses bad values of the backends' flags before a command runs.
func checkStoreFlags(c *cli.Context) error {
	_, err := backendFlags(c)
	return err
}

// backendFlags reads the backends' flags.
func backendFlags(c *cli.Context) (backendOptions, error) {
	o := s3.Options{PathStyle: globalBool(c, "s3-path-style"), UnsafeNoConditional: globalBool(c, "s3-unsafe-no-conditional")}
	for _, f := range []struct {
		name string
		d    *time.Duration
	}{{"s3-connect-timeout", &o.ConnectTimeout}, {"s3-read-timeout", &o.ReadTimeout}} {
		if v := globalString(c, f.name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return backendOptions{s3: o}, usageError("--%s takes a duration (30s, 2m), not %q", f.name, v)
			}
			*f.d = d
		}
	}
	return backendOptions{s3: o}, nil
}

// registry is the location registry with every backend, their options those of g.
func (g globals) registry() *location.Registry {
	r := location.NewRegistry()
	r.Register(location.Factory{Scheme: "", Open: func(_ context.Context, dir string) (store.Backend, error) {
		return local.New(dir, local.LimitsWait(g.wait))
	}})
	r.Register(location.Factory{Scheme: "s3", Open: func(ctx context.Context, uri string) (store.Backend, error) {
		opts := g.backends.s3
		opts.LimitsWait = g.wait
		return s3.Open(ctx, uri, opts)
	}})
	return r
}

// openStore opens the store at loc (a folder or a URI) through the registry. Nothing is read or
// written yet: the backend judges the location at its first call.
func (g globals) openStore(loc string) (store.Backend, error) {
	return g.registry().Open(g.ctx, loc)
}

// openForCheck opens a path named by a b3sum line (verify --check): a finished upload of a local
// store only through its guarded open.
func openForCheck(path string) (io.ReadCloser, error) { return local.OpenForCheck(path) }

// storesUnder finds the local stores below root (sweep --stores-under): by their mark, never
// descending into a store, following a link or crossing into another file system.
func storesUnder(root string) ([]string, []store.Skip, error) { return local.StoresUnder(root) }

// The modes the local store gives its folders and files, for verify --format text's chmod hint.
const (
	storeDirMode      os.FileMode = local.DirMode
	storeFileMode     os.FileMode = local.FileMode
	storeReadOnlyMode os.FileMode = local.ReadOnlyMode
)
