package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/sweep"
)

// sweepUnder is `sweep --stores-under ROOT`: every store below ROOT swept in turn, each under its
// own lock, for one cron line over many chats. A store another sweep holds past --wait is skipped
// with its line, not failed: the sweep that holds it is doing the work. Each removal line names
// its store.
func sweepUnder(g globals, root string, opts sweep.Options) error {
	stores, skipped, err := storesUnder(root)
	if err != nil {
		g.report(fault.AsError(err, fault.FileUnreadable))
		return exitError{exitFailed}
	}
	for _, sk := range skipped {
		g.summary("sweep: skipped %s: %s", manifest.Quote(sk.Path), sk.Why)
	}
	enc := json.NewEncoder(g.stdout)
	var all sweep.Summary
	swept, held, failed := 0, 0, 0
	for _, dir := range stores {
		if g.ctx.Err() != nil {
			break
		}
		label := "sweep: " + manifest.Quote(dir)
		b, err := g.openStore(dir)
		var sum sweep.Summary
		if err == nil {
			loc := b.Location()
			sum, err = sweep.Run(g.ctx, b, opts, func(r sweep.Removed) error {
				return enc.Encode(struct {
					sweep.Removed
					Store string `json:"store"`
				}{r, loc})
			})
		}
		all.Removed += sum.Removed
		all.Bytes += sum.Bytes
		switch {
		case errors.Is(err, context.Canceled):
			g.summary("%s: interrupted: removed %s (%s) before it stopped", label, counted(sum.Removed, "upload"), store.Human(sum.Bytes))
		case fault.CodeOf(err) == fault.StoreLocked:
			held++
			g.summary("%s: skipped: %s", label, fault.AsError(err, "").Error())
		case err != nil:
			failed++
			g.report(fault.AsError(fmt.Errorf("%s: %w", manifest.Quote(dir), err), fault.UploadUnreadable))
		default:
			swept++
			all.Kept += sum.Kept
			all.Skipped = append(all.Skipped, sum.Skipped...)
			all.Failed = append(all.Failed, sum.Failed...)
			sweepLines(g, label, sum)
			g.summary("%s: %s, kept %d, skipped %d%s", label, sweptWords(sum, opts.DryRun), sum.Kept, len(sum.Skipped), failedNote(len(sum.Failed)))
		}
	}
	var heldNote, failNote string
	if held > 0 {
		heldNote = fmt.Sprintf(", %s held by another sweep (skipped)", counted(held, "store"))
	}
	if failed > 0 {
		failNote = fmt.Sprintf(", %s failed", counted(failed, "store"))
	}
	g.summary("sweep: %s under %s: %d swept%s%s; %s, kept %d, skipped %d%s", counted(len(stores), "store"), manifest.Quote(root),
		swept, heldNote, failNote, sweptWords(all, opts.DryRun), all.Kept, len(all.Skipped), failedNote(len(all.Failed)))
	if g.ctx.Err() != nil || failed > 0 || len(all.Failed) > 0 {
		return exitError{exitFailed}
	}
	return nil
}
