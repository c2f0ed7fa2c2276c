package main

import (
	"encoding/json"
	"fmt"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:  "store",
		Usage: "make a store and set its limits",
		Description: "store init marks a store and keeps its limits in its mark (see attachctl store init --help).\n\n" +
			example("attachctl store init --store ~/.local/state/attachctl/chat-42 --max-file 100MB --max-bytes 1GB --max-files 1000"),
		Subcommands: []*cli.Command{{
			Name:  "init",
			Usage: "mark a store and set its limits; prints {\"store\",\"limits\"}",
			Description: "Makes the store (a folder, or s3://BUCKET/PREFIX) where one may be made, as the first upload\n" +
				"would, and keeps its limits in its mark: the largest file (--max-file), the bytes of all\n" +
				"uploads together (--max-bytes) and how many uploads (--max-files), finished or not. Every\n" +
				"command that adds to the store checks them before it writes a byte: a file over --max-file\n" +
				"is upload.tooLarge, one that would pass --max-bytes or --max-files store.full. Limits are\n" +
				"set once: a store that has some keeps them (the same again is no change). Without flags it\n" +
				"prints the limits the store has.\n\n" +
				example("attachctl store init --store ~/.local/state/attachctl/chat-42 --max-file 100MB --max-bytes 1GB --max-files 1000"),
			Flags: []cli.Flag{
				bytesFlag("max-file", 0, "the largest upload the store takes, in `BYTES` (default: no limit)"),
				bytesFlag("max-bytes", 0, "all uploads together, in `BYTES` (default: no limit)"),
				&cli.Int64Flag{Name: "max-files", Usage: "how many uploads the store holds, finished or not, at most `N` (default: no limit)"},
			},
			Action: storeInit,
		}},
	})
}

// storeInit is `attachctl store init`.
func storeInit(c *cli.Context) error {
	if c.Args().Present() {
		return usageError("store init takes no arguments, got %q", c.Args().First())
	}
	if err := noZeroLimit(c, "max-file", "max-bytes", "max-files"); err != nil {
		return err
	}
	l := store.Limits{MaxFile: c.Int64("max-file"), MaxBytes: c.Int64("max-bytes"), MaxFiles: c.Int64("max-files")}
	if l.MaxFile < 0 || l.MaxBytes < 0 || l.MaxFiles < 0 {
		return usageError("--max-file, --max-bytes and --max-files take whole numbers of at least 1 (no flag: no limit)")
	}
	set := c.IsSet("max-file") || c.IsSet("max-bytes") || c.IsSet("max-files")
	return initStore(globalOptions(c), l, set)
}

// initStore makes the store, or keeps it, and sets its limits to l when set, else keeps its own;
// it prints the limits the store has then.
func initStore(g globals, l store.Limits, set bool) error {
	dir, err := g.storeDir()
	if err != nil {
		return err
	}
	fail := func(err error) error {
		e := *fault.AsError(err, fault.UploadUnreadable)
		if e.Stage == "" {
			e.Stage = "store init"
		}
		g.report(&e)
		return exitError{exitFailed}
	}
	b, err := g.openStore(dir)
	if err != nil {
		return fail(err)
	}
	defer g.madeStore("store init", b)()
	lim := b.Features().Limiter
	if lim == nil {
		return fail(fault.Errorf(fault.UploadInvalid, "store %s keeps no limits", b.Location()))
	}
	if !set {
		if l, err = lim.Limits(g.ctx); err != nil {
			return fail(err)
		}
	}
	if err := lim.SetLimits(g.ctx, l); err != nil {
		return fail(err)
	}
	out, _ := json.Marshal(struct {
		Store  string       `json:"store"`
		Limits store.Limits `json:"limits"`
	}{b.Location(), l})
	if _, err := fmt.Fprintf(g.stdout, "%s\n", out); err != nil {
		return outputFailed("store init", err)
	}
	return nil
}
