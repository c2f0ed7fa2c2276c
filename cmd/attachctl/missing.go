package main

import (
	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/urfave/cli/v2"
)

// sayIfMissing writes one line on standard error when b is a store that does not exist (unless
// --quiet): sweep, ls and verify --all take it as empty and exit 0, but a typo
// in a crontab's --store must not succeed silently forever.
func sayIfMissing(c *cli.Context, b store.Backend) {
	e, ok := b.(store.Exister)
	if !ok || globalBool(c, "quiet") {
		return
	}
	if exists, err := e.Exists(c.Context); err == nil && !exists {
		summary(c, "%s: no store at %s (it does not exist): nothing to do", c.Command.Name, manifest.Quote(b.Location()))
	}
}
