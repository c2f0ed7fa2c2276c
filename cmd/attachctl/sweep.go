package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops"
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
			example("attachctl sweep --store S --older-than 168h   # from cron"),
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "older-than", Usage: "cutoff: now minus `DURATION` (e.g. 168h)"},
			&cli.StringFlag{Name: "before", Usage: "cutoff: `TIME` in RFC 3339 (e.g. 2024-05-01T00:00:00Z)"},
			&cli.BoolFlag{Name: "dry-run", Usage: "report what would be removed; remove nothing"},
			&cli.DurationFlag{Name: "wait", Usage: "wait up to `DURATION` for another sweep of the store to end"},
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
		if c.Duration("older-than") < 0 {
			return usageError("--older-than takes a duration of at least 0, not %s", c.Duration("older-than"))
		}
		before = time.Now().Add(-c.Duration("older-than"))
	default:
		t, err := time.Parse(time.RFC3339Nano, c.String("before"))
		if err != nil {
			return usageError("--before takes an RFC 3339 time such as 2024-05-01T00:00:00Z, not %q", c.String("before"))
		}
		before = t
	}
	if c.Duration("wait") < 0 {
		return usageError("--wait takes a duration of at least 0")
	}
	dir, err := storeDir(c)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		report(c, manifest.AsError(err, manifest.UploadUnreadable))
		return exitError{exitFailed}
	}
	s, err := ops.Open(dir, false)
	if err != nil {
		return fail(err)
	}
	enc := json.NewEncoder(c.App.Writer)
	// SIGINT and SIGTERM cancel c.Context: the sweep stops after the removals under way, each
	// reported, and the exit code is 128+N.
	sum, err := sweep.Run(c.Context, s.Backend(), sweep.Options{Before: before, DryRun: c.Bool("dry-run"), Wait: c.Duration("wait")},
		func(r sweep.Removed) error { return enc.Encode(r) })
	if errors.Is(err, context.Canceled) {
		summary(c, "sweep: interrupted: removed %d upload%s (%d bytes) before it stopped", sum.Removed, plural(sum.Removed), sum.Bytes)
		return exitError{exitFailed}
	}
	if err != nil {
		return fail(err)
	}
	for _, sk := range sum.Skipped {
		if !globalBool(c, "quiet") {
			fmt.Fprintf(c.App.ErrWriter, "attachctl: sweep: skipped %s: %s\n", sk.Path, sk.Why)
		}
	}
	for _, e := range sum.Failed {
		fmt.Fprintf(c.App.ErrWriter, "attachctl: sweep: %v\n", e)
	}
	if sum.Removed > 0 || len(sum.Skipped) > 0 || len(sum.Failed) > 0 {
		verb := "removed"
		if c.Bool("dry-run") {
			verb = "would remove"
		}
		summary(c, "sweep: %s %d upload%s (%d bytes), kept %d, skipped %d%s", verb, sum.Removed, plural(sum.Removed),
			sum.Bytes, sum.Kept, len(sum.Skipped), failedNote(len(sum.Failed)))
	}
	if len(sum.Failed) > 0 {
		return exitError{exitFailed}
	}
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func failedNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d failed", n)
}
