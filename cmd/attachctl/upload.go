package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/stage"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/sniff"
	"github.com/urfave/cli/v2"
)

func init() {
	idFlag := &cli.StringFlag{Name: "id", Usage: "the upload's `ID`", Required: true}
	register(&cli.Command{
		Name:      "upload",
		Usage:     "put each file into the store in resumable chunks; sets upload on each record",
		ArgsUsage: "[PATH...]",
		Description: "Reads each record's file once, in chunks of at most --chunk bytes, hashing it in the\n" +
			"same pass (upload.hashMismatch when it is not the manifest's BLAKE3). A file already\n" +
			"finished in the store with the same BLAKE3 and name is not uploaded again. Killed and run\n" +
			"again with the same input, it resumes where the durable bytes end; a changed source\n" +
			"starts over. Paths given as arguments are sniffed in the same pass: the head for the type,\n" +
			"the upload's own read for the BLAKE3 and the text check, so each file is read once and\n" +
			"the records are those of `attachctl sniff PATH | attachctl upload` (--no-hash is implied).\n" +
			"`upload - --name NAME` uploads standard input as one file. The subcommands do the same\n" +
			"step by step.\n\n" +
			example("attachctl sniff shots/*.png | attachctl upload --store ~/.local/state/attachctl/chat-42",
				"pg_dump mydb | attachctl upload - --name mydb.sql --store ~/.local/state/attachctl/chat-42"),
		Flags: append([]cli.Flag{
			manifestFlag, noHashFlag, chunkFlag(), limitsWaitFlag(),
			&cli.StringFlag{Name: "name", Usage: "with -: the plain file `NAME` the agent is shown"},
		}, walkFlags...),
		Action: uploadStage,
		Subcommands: []*cli.Command{
			{
				Name: "begin", Usage: "start an upload; prints {\"id\",\"offset\":0}",
				Description: "Starts an unfinished upload in the store (made when missing) and prints its id.\n\n" +
					example(`id=$(attachctl upload begin --store S --name report.pdf --size 1048576 | jq -r .id)`),
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "name", Usage: "the upload's plain file `NAME`", Required: true},
					sizeFlag("size", "declared size in `BYTES` (-1: left open, fixed at finish)"),
					limitsWaitFlag(),
				},
				Action: func(c *cli.Context) error {
					g, err := withLimitsWait(c)
					if err != nil {
						return err
					}
					name, size := c.String("name"), c.Int64("size")
					return stepStore(g, c.NArg(), func(b store.Backend) (any, error) {
						id, err := b.Begin(g.ctx, name, size)
						return map[string]any{"id": id, "offset": 0}, err
					})
				},
			},
			{
				Name: "chunk", Usage: "append the bytes of FILE (or standard input) at --offset; prints the status", ArgsUsage: "[FILE|-]",
				Description: "Appends the bytes whole or not at all; the offset it prints is durable. An --offset other\n" +
					"than the current one is upload.offset and names the current one.\n\n" +
					example(`head -c 524288 report.pdf | attachctl upload chunk --store S --id "$id" --offset 0`),
				Flags: []cli.Flag{idFlag, &bytesCountFlag{Int64Flag: cli.Int64Flag{Name: "offset", Usage: "the current offset in `BYTES`", Required: true}}, limitsWaitFlag()},
				Action: func(c *cli.Context) error {
					g, err := withLimitsWait(c)
					if err != nil {
						return err
					}
					in, done, err := chunkInput(g, c.Args().Slice())
					if err != nil {
						return err
					}
					defer done()
					id, offset := c.String("id"), c.Int64("offset")
					return stepStore(g, c.NArg(), func(b store.Backend) (any, error) {
						if _, err := b.Write(g.ctx, id, offset, in); err != nil {
							return nil, err
						}
						return b.Status(g.ctx, id)
					})
				},
			},
			{
				Name: "status", Usage: "print {\"id\",\"name\",\"offset\",\"size\",\"finished\"}",
				Description: "Where an upload stands: its offset is where the next chunk goes (size -1 while open).\n\n" +
					example(`attachctl upload status --store S --id "$id" | jq .offset`),
				Flags: []cli.Flag{idFlag},
				Action: func(c *cli.Context) error {
					g, id := globalOptions(c), c.String("id")
					return stepStore(g, c.NArg(), func(b store.Backend) (any, error) { return b.Status(g.ctx, id) })
				},
			},
			{
				Name: "finish", Usage: "check size and BLAKE3, publish, and print the finished record",
				Description: "Checks the bytes received against --size and --blake3 (upload.sizeMismatch,\n" +
					"upload.hashMismatch) and publishes the upload whole at STORE/<id>/<name>.\n\n" +
					example(`attachctl upload finish --store S --id "$id" --blake3 "$(b3sum --no-names report.pdf)"`),
				Flags: []cli.Flag{idFlag,
					&cli.StringFlag{Name: "blake3", Usage: "the expected BLAKE3 in `HEX`"},
					sizeFlag("size", "the expected size in `BYTES`; fixes a size left open"),
					limitsWaitFlag(),
				},
				Action: func(c *cli.Context) error {
					g, err := withLimitsWait(c)
					if err != nil {
						return err
					}
					id, size, blake3 := c.String("id"), c.Int64("size"), c.String("blake3")
					return stepStore(g, c.NArg(), func(b store.Backend) (any, error) {
						info, err := b.Finish(g.ctx, id, size, blake3)
						if err != nil {
							return nil, err
						}
						return stage.FinishedRecord(b, info), nil
					})
				},
			},
			{
				Name: "abort", Usage: "remove an unfinished upload",
				Description: "Removes an unfinished upload and its bytes; a finished one is upload.invalid (sweep\n" +
					"removes those).\n\n" +
					example(`attachctl upload abort --store S --id "$id"`),
				Flags: []cli.Flag{idFlag},
				Action: func(c *cli.Context) error {
					g, id := globalOptions(c), c.String("id")
					return stepStore(g, c.NArg(), func(b store.Backend) (any, error) { return nil, b.Abort(g.ctx, id) })
				},
			},
		},
	})
}

// uploadFlags are upload's own flags (--chunk, also prepare's), read once by its Action.
type uploadFlags struct {
	chunk    int
	chunkSet bool   // --chunk was given: the store's own default otherwise
	name     string // --name, of what `upload -` reads
}

// uploadStage is `attachctl upload`'s Action: its flags checked and read.
func uploadStage(c *cli.Context) error {
	chunk, err := chunkSize(c)
	if err != nil {
		return err
	}
	g, err := withLimitsWait(c)
	if err != nil {
		return err
	}
	fromStdin := c.NArg() == 1 && c.Args().First() == "-"
	switch {
	case !fromStdin && slices.Contains(c.Args().Slice(), "-"):
		return usageError("upload - reads standard input as one file; give it alone")
	case !fromStdin && c.IsSet("name"):
		return usageError("--name names what upload - reads from standard input; a file's name is its own")
	case fromStdin && c.String("name") == "":
		return usageError("upload - needs --name NAME: the file name the agent is shown")
	case fromStdin && c.IsSet("files-from"):
		return usageError("upload - reads standard input as one file; it takes no --files-from")
	}
	return upload(g, stageOptions(c), uploadFlags{chunk: chunk, chunkSet: c.IsSet("chunk"), name: c.String("name")}, fromStdin)
}

// upload is the stage over a manifest (or path arguments), with a bar in bytes, or standard input
// as one file.
func upload(g globals, f stageFlags, u uploadFlags, fromStdin bool) error {
	dir, err := g.storeDir()
	if err != nil {
		return err
	}
	b, err := g.openStore(dir)
	if err != nil {
		return stepFail(g, err)
	}
	defer g.madeStore("upload", b)()
	if fromStdin {
		return uploadStdin(g, b, u.name)
	}
	bar := g.newBar(0, "upload", "bytes")
	// Uploads are committed in groups where the store can (the local store: each record, when
	// its turn to be written comes, commits every upload built by then), so the fsyncs of
	// several files are paid once and no record names an upload that is not finished.
	fl := &stage.Flight{}
	up, err := newUploader(g, f, b, u, withTestPause(g.ctx, bar.Add), fl)
	if u := new(usage); errors.As(err, &u) {
		return err
	}
	if err != nil {
		return stepFail(g, err)
	}
	fl.Wake = up.Wake
	err = loop{stage: "upload", flags: f, bar: bar, headOnly: true, window: uploadWindow, flight: fl, work: func(rec *manifest.Record) error {
		bar.AddTotal(rec.Size)
		var text sniff.Text // the upload's pass finishes the sniff of the head
		err := up.Upload(g.ctx, rec, text.Observe)
		text.Settle(rec)
		return err
	}, settle: up.Settle}.toStdout(g)
	if cerr := up.Commit(); cerr != nil { // cannot happen: every record was settled
		reportAll(g, "upload", cerr)
		return exitError{exitFailed}
	}
	return err
}

// uploadWindow is how many records the upload stage keeps in flight: two full batches of the
// local store (its batch window: 512 small uploads each) and room, so that one commit can take a
// whole batch while the next is built.
const uploadWindow = 1032

// newUploader is the upload stage over b with the command's --chunk (the store's own default
// unless given) and --jobs, its uploads published in groups.
func newUploader(g globals, f stageFlags, b store.Backend, u uploadFlags, progress func(int64), fl *stage.Flight) (*stage.Uploader, error) {
	batch, err := stage.NewBatch(g.ctx, b)
	if err != nil {
		return nil, err
	}
	walk, err := folderWalk(g, f)
	if err != nil {
		return nil, err
	}
	walk.Skipped = nil // the walk that found a folder told what it skips
	opts := stage.Options{Jobs: g.jobs, Progress: progress, Batch: batch, Walk: walk}
	if fl != nil { // the loop keeps a worker besides the one handing records on (loop.settle)
		opts.More = func() bool { return fl.More(uploadWindow) }
	}
	if g.forPerson() {
		opts.Resumed = func(path string, off int64) {
			personLine(g.stderr, fmt.Sprintf("attachctl: %s: %s: resuming at %d (%s kept)", g.cmd, escapeLine(manifest.Quote(path)), off, store.Human(off)))
		}
	}
	if u.chunkSet {
		opts.Chunk = int64(u.chunk)
		if least := stage.ChunkLeast(b); opts.Chunk < least {
			return nil, usageError("--chunk on store %s takes at least %d bytes (its smallest part), not %d", b.Location(), least, u.chunk)
		}
	}
	return stage.NewUploader(b, opts)
}

// uploadStdin is `upload - --name NAME`: standard input as one file (stage.UploadReader); its
// record is the finished upload's.
func uploadStdin(g globals, b store.Backend, name string) error {
	var bar *bar
	info, err := stage.UploadReader(g.ctx, b, name, g.stdin, stage.ReaderOptions{
		Begun: func(string) {
			g.terminalHint("the file")
			bar = g.newBar(-1, "upload", "bytes")
		},
		Progress: func(n int64) { bar.Add(n) },
	})
	bar.Finish()
	if err != nil {
		return stepFail(g, err)
	}
	out := manifest.NewWriter(g.stdout)
	if err := out.Write(stage.FinishedRecord(b, info)); err != nil {
		return outputFailed("upload", err)
	}
	if err := out.Flush(); err != nil {
		return outputFailed("upload", err)
	}
	return nil
}

// stepStore runs one step-by-step subcommand on the store and prints its JSON result, if any.
// nargs is how many arguments it was given.
func stepStore(g globals, nargs int, f func(b store.Backend) (any, error)) error {
	if nargs > 0 && g.cmd != "chunk" {
		return usageError("upload %s takes no arguments", g.cmd)
	}
	dir, err := g.storeDir()
	if err != nil {
		return err
	}
	b, err := g.openStore(dir)
	if err != nil {
		return stepFail(g, err)
	}
	out, err := f(b)
	return stepOutput(g, out, err)
}

// stepOutput ends a step-by-step subcommand: its JSON result on one line, or its failure.
func stepOutput(g globals, out any, err error) error {
	var done exitError
	var usage cli.ExitCoder
	if errors.As(err, &done) || errors.As(err, &usage) {
		return err // already said
	}
	if err != nil {
		return stepFail(g, err)
	}
	if out == nil {
		return nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(g.stdout, "%s\n", b); err != nil {
		return outputFailed("upload", err)
	}
	return nil
}

// chunkInput is what `upload chunk` appends: its FILE argument (of args), or standard input.
func chunkInput(g globals, args []string) (io.Reader, func(), error) {
	if len(args) > 1 {
		return nil, nil, usageError("upload chunk takes one FILE or -, not %d", len(args))
	}
	name := ""
	if len(args) == 1 {
		name = args[0]
	}
	if name == "" || name == "-" {
		return g.stdin, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		code := fault.FileUnreadable
		if errors.Is(err, os.ErrNotExist) {
			code = fault.FileMissing
		}
		return nil, nil, stepFail(g, fault.Errorf(code, "%v", err))
	}
	return f, func() { f.Close() }, nil
}

// stepFail prints "attachctl: upload: MESSAGE (CODE)" and ends with exit 1.
func stepFail(g globals, err error) error {
	fmt.Fprintf(g.stderr, "attachctl: upload: %s\n", escapeLine(fault.AsError(err, fault.UploadUnreadable).Error()))
	return exitError{exitFailed}
}
