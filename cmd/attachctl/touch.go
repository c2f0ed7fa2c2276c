package main

import (
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops/stage"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:  "touch",
		Usage: "mark each record's upload used now, so that sweep keeps it",
		Description: "Writes each upload's .used marker under the store's lock. A record whose upload is\n" +
			"not a finished upload of --store (or that belongs to another store) is upload.missing.\n\n" +
			example("attachctl touch --store S < uploaded.jsonl > touched.jsonl"),
		ArgsUsage: "[PATH...]",
		Flags:     []cli.Flag{manifestFlag},
		Action: func(c *cli.Context) error {
			g := globalOptions(c)
			store, err := g.storeWhenNeeded()
			if err != nil {
				return err
			}
			return loop{stage: "touch", flags: stageOptions(c), first: g.needStoreWhenNeeded(store), work: func(rec *manifest.Record) error {
				b, err := store()
				if err != nil {
					return err
				}
				return stage.Touch(g.ctx, b, rec, time.Now())
			}}.toStdout(g)
		},
	})
}
