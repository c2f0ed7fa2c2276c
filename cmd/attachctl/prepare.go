package main

import (
	"errors"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/acp"
	"github.com/attachctl/attachctl/shrink"
	"github.com/attachctl/attachctl/sniff"
	"github.com/urfave/cli/v2"
)

func init() {
	flags := append(shrinkFlags(), chunkFlag(), limitsWaitFlag(),
		&cli.BoolFlag{Name: "resolve", Usage: "write what the agent gets: the prompt resolved against the store, as the agent's daemon does; marks the uploads used"})
	flags = append(flags, walkFlags...)
	flags = append(flags, promptFlags()...)
	flags = append(flags, resolveFlags()...)
	register(&cli.Command{
		Name:      "prepare",
		Usage:     "the main job in one process: sniff, shrink, upload and prompt (and --resolve)",
		ArgsUsage: "PATH...",
		Description: "Sniffs the files (folders recursed in lexical order), shrinks images, uploads each into\n" +
			"the store (created when missing) and writes the prompt JSON naming the uploads, as\n" +
			"`attachctl sniff PATH... | attachctl shrink | attachctl upload | attachctl prompt` would, with\n" +
			"their flags. With --resolve it writes the resolved prompt instead, marking the uploads used.\n" +
			"Any file that fails makes it write nothing and exit 1.\n\n" +
			example("attachctl prepare --store ~/.local/state/attachctl/chat-42 --text \"What changed?\" shots/"),
		Flags: flags,
		Action: func(c *cli.Context) error {
			if !c.Args().Present() && c.String("files-from") == "" {
				return usageError("prepare takes the files to attach as arguments (or --files-from)")
			}
			if err := onlyWith(c, "resolve", flagNames(resolveFlags())...); err != nil {
				return err
			}
			p, err := promptOptions(c)
			if err != nil {
				return err
			}
			var ropts acp.Options
			if c.Bool("resolve") {
				if ropts, err = resolveOptions(c); err != nil {
					return err
				}
			}
			sopts, err := shrinkOptions(c)
			if err != nil {
				return err
			}
			limitHeap(sopts)
			chunk, err := chunkSize(c)
			if err != nil {
				return err
			}
			g, err := withLimitsWait(c)
			if err != nil {
				return err
			}
			return prepare(g, prepareOptions{stage: stageOptions(c), prompt: p, shrink: sopts, upload: uploadFlags{chunk: chunk, chunkSet: c.IsSet("chunk")},
				resolve: c.Bool("resolve"), resolveOpts: ropts, explain: c.Bool("explain")})
		},
	})
}

// prepareOptions are prepare's flags, read once by its Action.
type prepareOptions struct {
	stage  stageFlags
	prompt promptValues
	shrink shrink.Options
	upload uploadFlags
	// resolve: --resolve, the prompt resolved by resolveOpts; explain: --explain.
	resolve     bool
	resolveOpts acp.Options
	explain     bool
}

// prepare is `attachctl prepare`: sniff, shrink, upload and prompt, and with --resolve the prompt
// resolved.
func prepare(g globals, o prepareOptions) error {
	dir, err := g.storeDir()
	if err != nil {
		return err
	}
	// A bar in bytes, fed as they are written, as upload's: an interrupted run counts what
	// it wrote, not only the files it finished.
	bar := g.newBar(0, "prepare", "bytes")
	up, err := prepareUploader(g, o.stage, dir, o.upload, withTestPause(g.ctx, bar.Add))
	if u := new(usage); errors.As(err, &u) {
		return err
	}
	if err != nil {
		g.report(fault.AsError(err, fault.UploadUnreadable))
		return exitError{exitFailed}
	}
	recs, err := collect(g, loop{stage: "prepare", flags: o.stage, bar: bar, headOnly: up.headOnly, window: up.window, work: func(rec *manifest.Record) error {
		if err := shrink.Record(rec, o.shrink); err != nil {
			rec.Fail("shrink", err, fault.FileUnreadable)
			return nil
		}
		if rec.Failed() {
			return nil
		}
		bar.AddTotal(rec.Size) // the shrunk file's, when it was shrunk
		if err := up.upload(rec); err != nil {
			rec.Fail("upload", err, fault.UploadUnreadable)
		}
		return nil
	}})
	if cerr := up.commit(); cerr != nil {
		reportAll(g, "prepare", cerr)
		return exitError{exitFailed}
	}
	if err != nil {
		return err
	}
	for _, r := range recs {
		if r.Failed() {
			return exitError{exitFailed} // each was reported as it failed
		}
	}
	out, err := buildPrompt(g, o.prompt, recs)
	if err != nil {
		return err
	}
	if o.resolve {
		return resolveTo(g, dir, out, o.resolveOpts, o.explain)
	}
	if _, err := g.stdout.Write(out); err != nil {
		return outputFailed("prepare", err)
	}
	return nil
}

// preparer is how prepare puts its files into the store.
type preparer struct {
	// headOnly: the upload's own pass hashes every byte and finishes the sniff's text check, so
	// the loop sniffs heads only.
	headOnly bool
	upload   func(rec *manifest.Record) error
	commit   func() error // after the last upload; nothing is named before it succeeded
	window   int          // records in flight (loop.window)
}

// prepareUploader is the upload stage into the store at dir, its uploads published in groups
// where the store can (the local store: one flush for the lot once all are copied).
func prepareUploader(g globals, f stageFlags, dir string, u uploadFlags, progress func(int64)) (preparer, error) {
	b, err := g.openStore(dir)
	if err != nil {
		return preparer{}, err
	}
	made := g.madeStore("prepare", b) // before the uploader, which may make the store's folder
	up, err := newUploader(g, f, b, u, progress, nil)
	if err != nil {
		return preparer{}, err
	}
	commit := func() error {
		err := up.Commit()
		made()
		return err
	}
	return preparer{headOnly: true, commit: commit, window: uploadWindow, upload: func(rec *manifest.Record) error {
		var text sniff.Text
		err := up.Upload(g.ctx, rec, text.Observe)
		text.Settle(rec)
		return err
	}}, nil
}
