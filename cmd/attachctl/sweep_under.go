package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/sweeps"
	"github.com/attachctl/attachctl/sweep"
)

// sweepUnder is `sweep --stores-under ROOT` (sweeps.Under): each removal line names its store,
// each store gets a summary line (or its skip, or its failure), and one line sums them up.
func sweepUnder(g globals, root string, opts sweep.Options) error {
	enc := json.NewEncoder(g.stdout)
	res, err := sweeps.Under(g.ctx, root, sweeps.Options{
		Sweep: opts,
		Open:  func(_ context.Context, dir string) (store.Backend, error) { return g.openStore(dir) },
		Find:  storesUnder,
		Skipped: func(sk store.Skip) {
			g.summary("sweep: skipped %s: %s", manifest.Quote(sk.Path), sk.Why)
		},
		Removed: func(loc string, r sweep.Removed) error {
			return enc.Encode(struct {
				sweep.Removed
				Store string `json:"store"`
			}{r, loc})
		},
		Done: func(st sweeps.Store) {
			label, sum := "sweep: "+manifest.Quote(st.Dir), st.Summary
			switch st.Outcome {
			case sweeps.Interrupted:
				g.summary("%s: interrupted: removed %s (%s) before it stopped", label, counted(sum.Removed, "upload"), store.Human(sum.Bytes))
			case sweeps.Held:
				g.summary("%s: skipped: %s", label, fault.AsError(st.Err, "").Error())
			case sweeps.Failed:
				g.report(fault.AsError(st.Err, fault.UploadUnreadable))
			case sweeps.Swept:
				sweepLines(g, label, sum)
				g.summary("%s: %s, kept %d, skipped %d%s", label, sweptWords(sum, opts.DryRun), sum.Kept, len(sum.Skipped), failedNote(len(sum.Failed)))
			}
		},
	})
	if err != nil {
		g.report(fault.AsError(err, fault.FileUnreadable))
		return exitError{exitFailed}
	}
	all := res.Total
	var heldNote, failNote string
	if res.Held > 0 {
		heldNote = fmt.Sprintf(", %s held by another sweep (skipped)", counted(res.Held, "store"))
	}
	if res.Failed > 0 {
		failNote = fmt.Sprintf(", %s failed", counted(res.Failed, "store"))
	}
	g.summary("sweep: %s under %s: %d swept%s%s; %s, kept %d, skipped %d%s", counted(res.Stores, "store"), manifest.Quote(root),
		res.Swept, heldNote, failNote, sweptWords(all, opts.DryRun), all.Kept, len(all.Skipped), failedNote(len(all.Failed)))
	if g.ctx.Err() != nil || res.Failed > 0 || len(all.Failed) > 0 {
		return exitError{exitFailed}
	}
	return nil
}
