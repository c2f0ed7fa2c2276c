package main

import (
	"encoding/json"
	"time"

	"github.com/attachctl/attachctl/sweep"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:      "rm",
		Usage:     "remove finished uploads by id, under the sweep's lock and by its rules",
		ArgsUsage: "ID...",
		Description: "Removes each finished upload named, whatever its age or use, as a sweep removes one:\n" +
			"under the store's sweep lock, re-checked, following no link and removing nothing outside\n" +
			"the store. Every id is checked first: one that is not a finished upload of the store\n" +
			"(upload.missing; an unfinished one is upload.invalid, see `upload abort`) removes nothing.\n" +
			"Writes one JSON line per upload removed, as sweep does. --workdir DIR (repeatable) also\n" +
			"removes the working copies resolve made there of what it removes.\n\n" +
			example(`attachctl rm --store S 019ad7c2-5c1e-7b3a-9f10-2b7c4d5e6f70`),
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "workdir", Usage: "also remove the working copies in `DIR` (resolve --workdir) of what is removed (repeatable)"},
			&cli.BoolFlag{Name: "dry-run", Usage: "report what would be removed; remove nothing"},
			&cli.StringFlag{Name: "wait", Usage: "wait up to `DURATION` (s, m, h, d, w) for a sweep of the store to end (default: 0s)"},
		},
		Action: rmCmd,
	})
}

func rmCmd(c *cli.Context) error {
	ids := c.Args().Slice()
	if len(ids) == 0 {
		return usageError("rm needs the ID of at least one upload")
	}
	wait, err := durationFlag(c, "wait", 0)
	if err != nil {
		return err
	}
	workdirs, err := workdirFlags(c)
	if err != nil {
		return err
	}
	return rm(globalOptions(c), removal{cmd: "rm", dry: c.Bool("dry-run"), ids: ids, workdirs: workdirs}, wait)
}

// rm removes r's ids from the store, waiting up to wait for its lock.
func rm(g globals, r removal, wait time.Duration) error {
	dir, err := g.storeDir()
	if err != nil {
		return err
	}
	b, err := g.openStore(dir)
	if err != nil {
		return sweepEnd(g, removal{cmd: "rm"}, nil, sweep.Summary{}, err, nil)
	}
	if err := g.needStore(b); err != nil {
		return err
	}
	enc := json.NewEncoder(g.stdout)
	removed := map[string]bool{}
	sum, err := sweep.Remove(g.ctx, b, r.ids, wait, r.dry, func(rec sweep.Removed) error {
		removed[rec.ID] = true
		return enc.Encode(rec)
	})
	return sweepEnd(g, r, b, sum, err, removed)
}
