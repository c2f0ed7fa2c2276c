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
			text, hasText, err := promptText(c)
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
			if err := applyLimitsWait(c); err != nil {
				return err
			}
			dir, err := storeDir(c)
			if err != nil {
				return err
			}
			// A bar in bytes, fed as they are written, as upload's: an interrupted run counts what
			// it wrote, not only the files it finished.
			bar := newBar(c, 0, "prepare", "bytes")
			up, err := prepareUploader(c, dir, chunk, withTestPause(c.Context, bar.Add))
			if u := new(usage); errors.As(err, &u) {
				return err
			}
			if err != nil {
				report(c, fault.AsError(err, fault.UploadUnreadable))
				return exitError{exitFailed}
			}
			recs, err := collect(globalOptions(c), loop{stage: "prepare", flags: stageOptions(c), bar: bar, headOnly: up.headOnly, window: up.window, work: func(rec *manifest.Record) error {
				if err := shrink.Record(rec, sopts); err != nil {
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
				reportAll(globalOptions(c), "prepare", cerr)
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
			out, err := buildPrompt(c, recs, text, hasText)
			if err != nil {
				return err
			}
			if c.Bool("resolve") {
				return resolveTo(c, dir, out, ropts)
			}
			if _, err := c.App.Writer.Write(out); err != nil {
				return outputFailed("prepare", err)
			}
			return nil
		},
	})
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
func prepareUploader(c *cli.Context, dir string, chunk int, progress func(int64)) (preparer, error) {
	b, err := openStore(c, dir)
	if err != nil {
		return preparer{}, err
	}
	made := madeStore(c, "prepare", b) // before the uploader, which may make the store's folder
	up, err := newUploader(globalOptions(c), stageOptions(c), b, uploadFlags{chunk: chunk, chunkSet: c.IsSet("chunk")}, progress, nil)
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
		err := up.Upload(c.Context, rec, text.Observe)
		text.Settle(rec)
		return err
	}}, nil
}
