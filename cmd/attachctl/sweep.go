package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/acp"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/location"
	"github.com/attachctl/attachctl/sweep"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:  "sweep",
		Usage: "remove stale uploads: unfinished, finished and never used, and used, each by its own cutoff",
		Description: "Three tiers, each with its own cutoff, each optional (at least one is needed):\n" +
			"  --unfinished-older-than  unfinished uploads last written before it (stuck uploads)\n" +
			"  --unused-older-than      finished uploads never used, made before it\n" +
			"  --used-older-than        used uploads, made and last used before it\n" +
			"--older-than (or --before) sets all three; a tier's own flag overrides it. Writes one\n" +
			"JSON line per upload removed (with --dry-run: that would be) and a summary on standard\n" +
			"error. --workdir DIR (repeatable) also removes the working copies resolve made there of\n" +
			"what it removes, and copies whose upload is gone. It follows no link, removes nothing\n" +
			"outside the store and leaves what it does not recognise. Another sweep running on the\n" +
			"store is waited for up to --wait, then store.locked (exit 11), naming the sweep that holds it.\n" +
			"--stores-under ROOT sweeps every store below ROOT (found by its mark; no link followed, no\n" +
			"other file system entered), each under its own lock: a store another sweep holds past --wait\n" +
			"is skipped with its line, not failed. One summary line per store, and one for all.\n\n" +
			example("attachctl sweep --store S --unfinished-older-than 15m --unused-older-than 1d --older-than 7d   # from cron",
				"attachctl sweep --store S --before 2026-11-30 --dry-run",
				"attachctl sweep --stores-under ~/.local/state/attachctl --older-than 7d --wait 10m --quiet   # every chat, from cron"),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "older-than", Usage: "every tier's cutoff: now minus `DURATION`, in s, m, h, d or w (7d, 36h)"},
			&cli.StringFlag{Name: "before", Usage: "every tier's cutoff: `TIME` in RFC 3339 (2026-11-30T08:00:00Z) or a date (2026-11-30, midnight local time)"},
			&cli.StringFlag{Name: "unfinished-older-than", Usage: "unfinished uploads last written more than `DURATION` ago"},
			&cli.StringFlag{Name: "unused-older-than", Usage: "finished uploads never used, made more than `DURATION` ago"},
			&cli.StringFlag{Name: "used-older-than", Usage: "used uploads, made and last used more than `DURATION` ago"},
			&cli.StringSliceFlag{Name: "workdir", Usage: "also remove the working copies in `DIR` (resolve --workdir) of what is removed or gone (repeatable)"},
			&cli.BoolFlag{Name: "dry-run", Usage: "report what would be removed; remove nothing"},
			&cli.StringFlag{Name: "wait", Usage: "wait up to `DURATION` (s, m, h, d, w) for another sweep of the store to end (default: 0s)"},
			&cli.StringFlag{Name: "stores-under", Usage: "sweep every store below the folder `ROOT`, each under its own lock (one held by another sweep is skipped), in place of --store"},
		},
		Action: sweepCmd,
	})
}

// sweepOptions reads the cutoffs: --older-than or --before for every tier, a tier's own flag over it.
func sweepOptions(c *cli.Context) (sweep.Options, error) {
	var o sweep.Options
	now := time.Now()
	if c.IsSet("older-than") && c.IsSet("before") {
		return o, usageError("sweep takes one of --older-than DURATION and --before TIME, not both")
	}
	switch {
	case c.IsSet("older-than"):
		d, err := durationFlag(c, "older-than", 0)
		if err != nil {
			return o, err
		}
		o.Before = now.Add(-d)
	case c.IsSet("before"):
		t, err := timeFlag(c, "before")
		if err != nil {
			return o, err
		}
		o.Before = t
	}
	for _, tier := range []struct {
		flag string
		at   *time.Time
	}{{"unfinished-older-than", &o.Unfinished}, {"unused-older-than", &o.Unused}, {"used-older-than", &o.Used}} {
		if !c.IsSet(tier.flag) {
			continue
		}
		d, err := durationFlag(c, tier.flag, 0)
		if err != nil {
			return o, err
		}
		*tier.at = now.Add(-d)
	}
	if o.Before.IsZero() && o.Unfinished.IsZero() && o.Unused.IsZero() && o.Used.IsZero() {
		return o, usageError("sweep needs a cutoff: --older-than DURATION, --before TIME, or a tier's own (--unfinished-older-than, --unused-older-than, --used-older-than)")
	}
	return o, nil
}

func sweepCmd(c *cli.Context) error {
	if c.Args().Present() {
		return usageError("sweep takes no arguments, got %q", c.Args().First())
	}
	opts, err := sweepOptions(c)
	if err != nil {
		return err
	}
	wait, err := durationFlag(c, "wait", 0)
	if err != nil {
		return err
	}
	opts.Wait, opts.DryRun = wait, c.Bool("dry-run")
	workdirs, err := workdirFlags(c)
	if err != nil {
		return err
	}
	g := globalOptions(c)
	if c.IsSet("stores-under") {
		root := c.String("stores-under")
		switch {
		case root == "":
			return usageError("--stores-under takes a folder, not an empty string")
		case globalString(c, "store") != "":
			return usageError("--stores-under ROOT sweeps every store below ROOT; give it or --store, not both")
		case len(workdirs) > 0:
			return usageError("--workdir goes with --store: a working copy does not say which store's upload it is")
		case location.Scheme(root) != "":
			return usageError("--stores-under takes a folder, not %s", root)
		}
		return sweepUnder(g, root, opts)
	}
	return sweepStore(g, opts, removal{cmd: "sweep", dry: opts.DryRun, workdirs: workdirs})
}

// sweepStore is `sweep --store DIR`: the one store swept by opts.
func sweepStore(g globals, opts sweep.Options, r removal) error {
	dir, err := g.storeDir()
	if err != nil {
		return err
	}
	fail := func(err error) error {
		g.report(fault.AsError(err, fault.UploadUnreadable))
		return exitError{exitFailed}
	}
	b, err := g.openStore(dir)
	if err != nil {
		return fail(err)
	}
	g.sayIfMissing(b)
	enc := json.NewEncoder(g.stdout)
	removedIDs := map[string]bool{}
	// SIGINT and SIGTERM cancel the run's context: the sweep stops after the removals under way,
	// each reported, and the exit code is 128+N.
	sum, err := sweep.Run(g.ctx, b, opts, func(r sweep.Removed) error {
		removedIDs[r.ID] = true
		err := enc.Encode(r)
		testPauseAfter(g.ctx, len(removedIDs))
		return err
	})
	return sweepEnd(g, r, b, sum, err, removedIDs)
}

// removal is what a sweep or an rm was asked besides its store: the command, --dry-run, the ids
// given (rm), and the work folders of --workdir whose copies go with the uploads.
type removal struct {
	cmd      string
	dry      bool
	ids      []string
	workdirs []string
}

// workdirFlags reads --workdir as absolute folders.
func workdirFlags(c *cli.Context) ([]string, error) {
	var dirs []string
	for _, d := range c.StringSlice("workdir") {
		if d == "" {
			return nil, usageError("--workdir takes a folder, not an empty string")
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, usageError("--workdir %s: %v", d, err)
		}
		dirs = append(dirs, abs)
	}
	return dirs, nil
}

// sweepEnd reports what a sweep (or rm) did: the working copies it removes in r's work folders,
// the skipped entries, the failures and the summary, and returns the exit status.
func sweepEnd(g globals, r removal, b store.Backend, sum sweep.Summary, err error, removed map[string]bool) error {
	cmd, workdirs := r.cmd, r.workdirs
	if errors.Is(err, context.Canceled) {
		g.summary("%s: interrupted: removed %s (%s) before it stopped", cmd, counted(sum.Removed, "upload"), store.Human(sum.Bytes))
		return exitError{exitFailed}
	}
	if err != nil {
		g.report(fault.AsError(err, fault.UploadUnreadable))
		return lockedExit(err)
	}
	dry := r.dry
	copies, cerr := removeCopies(g, r, b, removed)
	sum.Failed = append(sum.Failed, cerr...)
	sweepLines(g, cmd, sum)
	if sum.Removed > 0 || len(sum.Skipped) > 0 || len(sum.Failed) > 0 || copies > 0 {
		var copyNote string
		if len(workdirs) > 0 {
			copyNote = fmt.Sprintf(" and %d working cop%s", copies, map[bool]string{true: "y", false: "ies"}[copies == 1])
		}
		if cmd == "rm" { // what it removed, by the ids given: rm keeps and skips nothing of its own
			verb := "removed"
			if dry {
				verb = "would remove"
			}
			g.summary("%s: %s %s (%s%s)%s%s", cmd, verb, counted(sum.Removed, "upload"), idsNote(r.ids, removed),
				store.Human(sum.Bytes), copyNote, failedNote(len(sum.Failed)))
		} else {
			g.summary("%s: %s%s, kept %d, skipped %d%s", cmd, sweptWords(sum, dry), copyNote, sum.Kept, len(sum.Skipped), failedNote(len(sum.Failed)))
		}
	}
	if len(sum.Failed) > 0 {
		return exitError{exitFailed}
	}
	return nil
}

// sweepLines prints, under label, what a sweep left because it did not recognise it (unless
// --quiet) and each removal that failed.
func sweepLines(g globals, label string, sum sweep.Summary) {
	for _, sk := range sum.Skipped {
		if !g.quiet {
			fmt.Fprintf(g.stderr, "attachctl: %s: skipped %s: %s\n", label, manifest.Quote(sk.Path), escapeLine(sk.Why))
		}
	}
	for _, e := range sum.Failed {
		fmt.Fprintf(g.stderr, "attachctl: %s: %s\n", label, escapeLine(e.Error()))
	}
}

// sweptWords is what a sweep removed, in words: "removed 2 uploads (12 B)".
func sweptWords(sum sweep.Summary, dry bool) string {
	verb := "removed"
	if dry {
		verb = "would remove"
	}
	return fmt.Sprintf("%s %s (%s)", verb, counted(sum.Removed, "upload"), store.Human(sum.Bytes))
}

// idsNote is "ID, ID: " for the ids (in the order given) that were removed, "" for none.
func idsNote(ids []string, removed map[string]bool) string {
	var done []string
	for _, id := range ids {
		if removed[id] && !slices.Contains(done, id) {
			done = append(done, id)
		}
	}
	if len(done) == 0 {
		return ""
	}
	return strings.Join(done, ", ") + ": "
}

// removeCopies removes, in each of r's work folders, the copies that sweep.CopyDoomed says go with
// the run (sweep: also those of uploads no longer in the store), each named on standard error
// unless --quiet.
func removeCopies(g globals, r removal, b store.Backend, removed map[string]bool) (int, []error) {
	cmd, workdirs, dry := r.cmd, r.workdirs, r.dry
	if len(workdirs) == 0 {
		return 0, nil
	}
	doomed, err := sweep.CopyDoomed(g.ctx, b, removed, cmd == "sweep")
	if err != nil {
		return 0, []error{err}
	}
	verb := "removed"
	if dry {
		verb = "would remove"
	}
	n := 0
	var errs []error
	for _, w := range workdirs {
		gone, err := acp.RemoveCopies(w, doomed, dry)
		if err != nil {
			errs = append(errs, err)
		}
		n += len(gone)
		for _, path := range gone {
			if !g.quiet {
				fmt.Fprintf(g.stderr, "attachctl: %s: %s working copy %s\n", cmd, verb, manifest.Quote(path))
			}
		}
	}
	return n, errs
}

func failedNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d failed", n)
}
