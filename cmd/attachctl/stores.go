package main

// The one file of the command that opens stores: it turns the backends' global flags into
// ops/store/open's options and hands the rest of the command what only a backend can say. Every
// other file opens a store with openStore and sees store.Backend and the seam's optional
// interfaces only (TestOnlyStoresImportsBackends checks it); the backends themselves are internal
// to ops/store.

import (
	"io"
	"time"

	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/open"
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
	open open.Options
}

// checkStoreFlags refuses bad values of the backends' flags before a command runs.
func checkStoreFlags(c *cli.Context) error {
	_, err := backendFlags(c)
	return err
}

// backendFlags reads the backends' flags.
func backendFlags(c *cli.Context) (backendOptions, error) {
	o := open.Options{S3: open.S3Options{
		PathStyle: globalBool(c, "s3-path-style"), UnsafeNoConditional: globalBool(c, "s3-unsafe-no-conditional")}}
	for _, f := range []struct {
		name string
		d    *time.Duration
	}{{"s3-connect-timeout", &o.S3.ConnectTimeout}, {"s3-read-timeout", &o.S3.ReadTimeout}} {
		if v := globalString(c, f.name); v != "" {
			d, ok := open.ParseS3Timeout(v)
			if !ok {
				return backendOptions{open: o}, usageError("--%s takes a duration (30s, 2m) or seconds, not %q", f.name, v)
			}
			*f.d = d
		}
	}
	return backendOptions{open: o}, nil
}

// openStore opens the store at loc (a folder or a URI), waiting g.wait for its limits lock.
// Nothing is read or written yet: the backend judges the location at its first call.
func (g globals) openStore(loc string) (store.Backend, error) {
	o := g.backends.open
	o.LimitsWait = g.wait
	return open.Store(g.ctx, loc, o)
}

// openForCheck opens a path named by a b3sum line (verify --check): a finished upload of a local
// store only through its guarded open.
func openForCheck(path string) (io.ReadCloser, error) { return open.ForCheck(path) }

// storesUnder finds the local stores below root (sweep --stores-under): by their mark, never
// descending into a store, following a link or crossing into another file system.
func storesUnder(root string) ([]string, []store.Skip, error) { return open.StoresUnder(root) }
