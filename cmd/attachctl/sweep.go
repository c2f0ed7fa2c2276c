package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/sweep"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:  "sweep",
		Usage: "remove uploads made and last used before a cutoff, and unfinished ones last written before it",
		Description: "Exactly one of --older-than and --before. Writes one JSON line per upload removed\n" +
			"(with --dry-run: that would be) and a summary on standard error. It follows no link,\n" +
			"removes nothing outside the store and leaves what it does not recognise. Another sweep\n" +
			"running on the store is waited for up to --wait, then store.locked (exit 1).\n\n" +
			example("attachctl sweep --store S --older-than 7d   # from cron", "attachctl sweep --store S --before 2026-11-30 --dry-run"),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "older-than", Usage: "cutoff: now minus `DURATION`, in s, m, h, d or w (7d, 36h)"},
			&cli.StringFlag{Name: "before", Usage: "cutoff: `TIME` in RFC 3339 (2026-11-30T08:00:00Z) or a date (2026-11-30, midnight local time)"},
			&cli.BoolFlag{Name: "dry-run", Usage: "report what would be removed; remove nothing"},
			&cli.StringFlag{Name: "wait", Usage: "wait up to `DURATION` (s, m, h, d, w) for another sweep of the store to end (default: 0s)"},
		},
		Action: sweepCmd,
	})
}

func sweepCmd(c *cli.Context) error {
	if c.Args().Present() {
		return usageError("sweep takes no arguments, got %q", c.Args().First())
	}
	var before time.Time
	switch {
	case c.IsSet("older-than") == c.IsSet("before"):
		return usageError("sweep needs exactly one of --older-than DURATION and --before TIME")
	case c.IsSet("older-than"):
		d, err := durationFlag(c, "older-than", 0)
		if err != nil {
			return err
		}
		before = time.Now().Add(-d)
	default:
		t, err := timeFlag(c, "before")
		if err != nil {
			return err
		}
		before = t
	}
	wait, err := durationFlag(c, "wait", 0)
	if err != nil {
		return err
	}
	dir, err := storeDir(c)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		report(c, manifest.AsError(err, manifest.UploadUnreadable))
		return exitError{exitFailed}
	}
	b, err := openStore(c, dir)
	if err != nil {
		return fail(err)
	}
	enc := json.NewEncoder(c.App.Writer)
	// SIGINT and SIGTERM cancel c.Context: the sweep stops after the removals under way, each
	// reported, and the exit code is 128+N.
	sum, err := sweep.Run(c.Context, b, sweep.Options{Before: before, DryRun: c.Bool("dry-run"), Wait: wait},
		func(r sweep.Removed) error { return enc.Encode(r) })
	if errors.Is(err, context.Canceled) {
		summary(c, "sweep: interrupted: removed %s (%s) before it stopped", counted(sum.Removed, "upload"), humanBytes(sum.Bytes))
		return exitError{exitFailed}
	}
	if err != nil {
		return fail(err)
	}
	for _, sk := range sum.Skipped {
		if !globalBool(c, "quiet") {
			fmt.Fprintf(c.App.ErrWriter, "attachctl: sweep: skipped %s: %s\n", manifest.Quote(sk.Path), escapeLine(sk.Why))
		}
	}
	for _, e := range sum.Failed {
		fmt.Fprintf(c.App.ErrWriter, "attachctl: sweep: %s\n", escapeLine(e.Error()))
	}
	if sum.Removed > 0 || len(sum.Skipped) > 0 || len(sum.Failed) > 0 {
		verb := "removed"
		if c.Bool("dry-run") {
			verb = "would remove"
		}
		summary(c, "sweep: %s %s (%s), kept %d, skipped %d%s", verb, counted(sum.Removed, "upload"),
			humanBytes(sum.Bytes), sum.Kept, len(sum.Skipped), failedNote(len(sum.Failed)))
	}
	if len(sum.Failed) > 0 {
		return exitError{exitFailed}
	}
	return nil
}

func failedNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d failed", n)
}
