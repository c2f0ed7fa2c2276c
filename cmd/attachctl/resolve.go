package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/acp"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/shrink"
	"github.com/urfave/cli/v2"
)

// resolveFlags are resolve's own flags, also on prepare (with --resolve).
func resolveFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "caps", Value: "image", Usage: "what the agent takes: a comma-separated list of image, audio, embeddedContext (empty: none); given with --initialize or --agent, what both allow (default: what the agent's initialize or its adapter profile says, else image)"},
		&cli.StringFlag{Name: "initialize", Usage: "the agent's ACP initialize response (or its result) in `FILE`: its promptCapabilities are what the agent takes"},
		&cli.StringFlag{Name: "workdir", Usage: "copy every file of the prompt into `DIR` (read-only, checked by BLAKE3), inline ones too, and link the copies; a copy the agent changed is kept"},
		&cli.StringFlag{Name: "agent", Usage: "the adapter layer: the agent is the adapter `NAME` (" + adapterNames + "); default: the one --initialize's agentInfo names, else none"},
		&cli.StringFlag{Name: "model", Usage: "the model layer: what provider `NAME` takes inline (" + modelNames + "); default: the adapter's provider"},
		&cli.BoolFlag{Name: "inline-from-folders", Usage: "images inside a folder upload may go inline too, under the same layers and limits as any image (default: a folder goes by path whole)"},
		&cli.BoolFlag{Name: "explain", Usage: "print on standard error, per file, how it went and which layer (protocol, adapter, model, limits) decided"},
		bytesFlag("inline-max", acp.DefaultInlineMax, "an image or audio file of at most `BYTES` may go inline"),
		bytesFlag("inline-budget", acp.DefaultInlineBudget, "inline image and audio `BYTES` of one prompt, taken in prompt order"),
		bytesFlag("max-message", acp.DefaultMaxMessage, "`BYTES` of the whole output JSON, inline data counted as base64"),
		bytesFlag("embed-max", acp.DefaultEmbedMax, "with embeddedContext, a text file of at most `BYTES` goes as a resource block"),
		&cli.BoolFlag{Name: "no-shrink", Usage: "an image over the model's pixel or byte limits goes by path (default: shrunk to fit into the shrink cache and sent inline, the original on disk)"},
		&cli.Int64Flag{Name: "max-tokens", Usage: "keep the inline images' and documents' estimated input tokens for the model within `N`: later ones go by path (default: no limit)"},
		bytesFlag("doc-max", acp.DefaultDocMax, "`BYTES` of document text (PDF, .docx, .xlsx, .pptx, .odt) one prompt carries, documents in prompt order, each cut at a page"),
		&cli.IntFlag{Name: "doc-pages", Value: acp.DefaultDocPages, Usage: "for a model that takes images, the first `N` pages of a document with little or no text (a scan, slides) go as images (0: none)"},
	}
}

var adapterNames, modelNames = acp.ProfileNames()

// resolveOptions reads resolve's flags.
func resolveOptions(c *cli.Context) (acp.Options, error) {
	caps, err := acp.ParseCaps(c.String("caps"))
	if err != nil {
		return acp.Options{}, usageError("--caps: %v", err)
	}
	var adapter *acp.Adapter
	if name := c.String("agent"); name != "" {
		if adapter = acp.FindAdapter(name); adapter == nil {
			return acp.Options{}, usageError("--agent: no adapter profile %q (known: %s)", name, adapterNames)
		}
	}
	var init *acp.Agent
	if name := c.String("initialize"); name != "" {
		b, err := os.ReadFile(name)
		if err != nil {
			return acp.Options{}, usageError("--initialize: %v", err)
		}
		agent, err := acp.ParseInitialize(b)
		if err != nil {
			return acp.Options{}, usageError("--initialize %s: %v", name, err)
		}
		init = &agent
		if adapter == nil {
			adapter = acp.FindAdapter(agent.Name) // an agent no profile knows: the protocol layer alone
		}
	}
	caps = acp.ProtocolCaps(caps, c.IsSet("caps"), init, adapter)
	var model *acp.Model
	if name := c.String("model"); name != "" {
		if model = acp.FindModel(name); model == nil {
			return acp.Options{}, usageError("--model: no model profile %q (known: %s)", name, modelNames)
		}
	} else if adapter != nil {
		model = acp.FindModel(adapter.Model)
	}
	o := acp.Options{Caps: caps, Adapter: adapter, Model: model, InlineMax: c.Int64("inline-max"), InlineBudget: c.Int64("inline-budget"),
		MaxMessage: c.Int64("max-message"), EmbedMax: c.Int64("embed-max"), InlineFromFolders: c.Bool("inline-from-folders")}
	if o.InlineMax < 1 || o.InlineBudget < 1 || o.MaxMessage < 1 || o.EmbedMax < 1 {
		return o, usageError("--inline-max, --inline-budget, --max-message and --embed-max take whole numbers of at least 1")
	}
	if dir := c.String("workdir"); dir != "" {
		if o.Workdir, err = filepath.Abs(dir); err != nil {
			return o, usageError("--workdir: %v", err)
		}
	}
	if o.MaxTokens = c.Int64("max-tokens"); o.MaxTokens < 0 {
		return o, usageError("--max-tokens takes a whole number of at least 0")
	}
	if o.Docs.Max, o.Docs.Pages = c.Int64("doc-max"), c.Int("doc-pages"); o.Docs.Max < 1 || o.Docs.Pages < 0 {
		return o, usageError("--doc-max takes a whole number of at least 1, --doc-pages one of at least 0")
	}
	if o.Docs.Pages == 0 {
		o.Docs.Pages = -1 // none
	}
	return o, fitOptions(c, &o)
}

// fitOptions reads how resolve shrinks images to fit: into shrink's cache, bounded by
// --max-memory and --max-pixels (shrink's own flags on prepare, resolve's on resolve).
// Documents' text and pages are cached there too, and their decoding draws on --max-memory, with
// --no-shrink as without.
func fitOptions(c *cli.Context, o *acp.Options) error {
	o.Shrink.Off = c.Bool("no-shrink")
	o.Shrink.MaxMemory, o.Shrink.MaxPixels = c.Int64("max-memory"), c.Int64("max-pixels")
	if o.Shrink.MaxMemory < 1 || o.Shrink.MaxPixels < 1 {
		return usageError("--max-memory and --max-pixels take numbers of at least 1")
	}
	dir, err := shrinkOut(c)
	o.Shrink.Dir = dir
	return err
}

func init() {
	register(&cli.Command{
		Name:      "resolve",
		Usage:     "resolve a prompt's upload references against the store, as the agent's daemon does",
		ArgsUsage: "[FILE]",
		Description: "Reads one session/prompt JSON document (params or a JSON-RPC request) from FILE or\n" +
			"standard input, as untrusted input, and writes it resolved on one line: images of at most\n" +
			"--inline-max bytes inline while the prompt's inline bytes stay within --inline-budget, every\n" +
			"other file as a file:// resource_link with mimeType and size, listed in one text block with\n" +
			"_meta.acpmux.context true. Keys are matched exactly; resolved blocks keep no upload reference,\n" +
			"so resolving the output again changes nothing. A refused prompt writes nothing and exits 1;\n" +
			"input that is not a prompt exits 2. Every upload of a resolved prompt is marked used.\n\n" +
			example("attachctl resolve --store ~/.local/state/attachctl/chat-42 < prompt.json"),
		Flags: append(resolveFlags(),
			&cli.Int64Flag{Name: "max-files", Usage: "refuse a prompt that names more than `N` uploads (upload.tooMany; default: no limit)"},
			bytesFlag("max-bytes", 0, "refuse a prompt whose uploads hold more than `BYTES` together (upload.tooMany; default: no limit)"),
			bytesFlag("max-memory", shrink.DefaultMaxMemory, "`BYTES` the decodes of images shrunk to fit may hold at once; an image needing more goes by path"),
			&cli.Int64Flag{Name: "max-pixels", Value: acp.DefaultFitMaxPixels, Usage: "an image of more `PIXELS` (by its header) is not decoded to shrink it: by path"},
		),
		Action: func(c *cli.Context) error {
			if err := noZeroLimit(c, "max-files", "max-bytes"); err != nil {
				return err
			}
			opts, err := resolveOptions(c)
			if err != nil {
				return err
			}
			if opts.MaxFiles, opts.MaxBytes = c.Int64("max-files"), c.Int64("max-bytes"); opts.MaxFiles < 0 || opts.MaxBytes < 0 {
				return usageError("--max-files and --max-bytes take whole numbers of at least 1 (no flag: no limit)")
			}
			if opts.Shrink.Dir != "" {
				limitHeap(shrink.Options{MaxMemory: opts.Shrink.MaxMemory}) // decodes of images shrunk to fit
			}
			if c.NArg() > 1 {
				return usageError("resolve takes one FILE at most")
			}
			return resolve(globalOptions(c), c.Args().First(), opts, c.Bool("explain"))
		},
	})
}

// resolve is `attachctl resolve [FILE]`: the prompt read from the file name (standard input
// when "" or -) and resolved against the store (resolveTo).
func resolve(g globals, name string, opts acp.Options, explain bool) error {
	in := g.stdin
	if name != "" && name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return usageError("%v", err)
		}
		defer f.Close()
		in = f
	}
	if in == g.stdin {
		g.terminalHint("a prompt (JSON)")
	}
	// Untrusted input: read at most twice one message (it may carry inline data).
	limit := 2*opts.MaxMessage + 1<<20
	b, err := readAllContext(g.ctx, io.LimitReader(in, limit+1))
	if err != nil && g.ctx.Err() != nil {
		fmt.Fprintf(g.stderr, "attachctl: %s: interrupted while reading the prompt: nothing written\n", g.cmd)
		return exitError{exitFailed}
	}
	if err != nil {
		return usageError("reading the prompt: %v", err)
	}
	if int64(len(b)) > limit {
		g.report(fault.Errorf(fault.UploadTooMany, "the prompt passes %d bytes: far more than one message", limit))
		return exitError{exitFailed}
	}
	dir, err := g.storeDir()
	if err != nil {
		return err
	}
	return resolveTo(g, dir, b, opts, explain)
}

// resolveTo resolves b against the store at dir and writes the resolved document to standard
// output, reporting refusals (exit 1) and input that is not a prompt (exit 2), and a summary on
// standard error, each under the command's name (resolve, or prepare --resolve). A refused
// prompt writes nothing.
// explain: --explain, how each file went, on standard error.
func resolveTo(g globals, dir string, b []byte, opts acp.Options, explain bool) error {
	u, err := uploadsAt(g, dir, &opts)
	var res *acp.Resolution
	if err == nil {
		opts.Context = g.ctx
		opts.BeforeRecheck = testResolvePause()
		opts.Docs.Timeout = testDocTimeout(opts.Docs.Timeout)
		res, err = acp.Resolve(b, u, opts)
	}
	if err == nil {
		err = g.ctx.Err() // a signal while the uploads were marked: nothing is written
	}
	if err != nil && g.ctx.Err() != nil {
		// SIGINT or SIGTERM: the run exits 130 or 143 (runWith), nothing on standard output.
		fmt.Fprintf(g.stderr, "attachctl: %s: interrupted: nothing written\n", g.cmd)
		return exitError{exitFailed}
	}
	var done exitError
	if errors.As(err, &done) {
		return err // already said
	}
	if err != nil {
		if allMissing(err) && !g.storeGiven() {
			// Most likely the prompt was made against another store: one line, not one per upload.
			g.report(fault.Errorf(fault.UploadMissing, "none of the prompt's uploads is in %s, the default store; give the chat's store with --store DIR or ATTACHCTL_STORE", dir))
			return exitError{exitFailed}
		}
		reportAll(g, g.cmd, err)
		if fault.CodeOf(err) == fault.ManifestInvalid {
			return exitError{exitUsage}
		}
		return lockedExit(err)
	}
	if _, err := res.WriteTo(g.stdout); err != nil {
		if fault.CodeOf(err) == "" {
			return outputFailed(g.cmd, err)
		}
		reportAll(g, g.cmd, err)
		return exitError{exitFailed}
	}
	if explain {
		for _, line := range res.Explain(opts) {
			fmt.Fprintf(g.stderr, "attachctl: %s: %s\n", g.cmd, escapeLine(line))
		}
	}
	if g.forPerson() {
		g.summary(g.cmd+": %d inline images, %d inline audio, %d embedded, %d by path (%s)",
			res.Inline, res.Audio, res.Embedded, res.ByPath, store.Human(res.Size))
	}
	return nil
}

// allMissing reports whether every refusal err joins is upload.missing.
func allMissing(err error) bool {
	for _, e := range joined(err) {
		if fault.CodeOf(e) != fault.UploadMissing {
			return false
		}
	}
	return true
}

// uploadsAt is the store at dir as resolve reads it. A store whose uploads are no files on this
// machine (S3) always hands out working copies: without --workdir they go under the XDG cache
// (defaultWorkdir).
func uploadsAt(g globals, dir string, opts *acp.Options) (acp.Uploads, error) {
	b, err := g.openStore(dir)
	if err != nil {
		return nil, err
	}
	if g.cmd == "resolve" { // prepare --resolve has just made the store
		if err := g.needStore(b); err != nil {
			return nil, err
		}
	}
	if b.Features().Pather == nil && opts.Workdir == "" {
		if opts.Workdir, err = defaultWorkdir(b.Location()); err != nil {
			return nil, fault.Errorf(fault.UploadUnreadable, "no --workdir and no home folder: %v", err)
		}
	}
	return acp.Backend(g.ctx, b), nil
}

// defaultWorkdir is where resolve puts the working copies of the store at loc (a URI) unless
// told: under the XDG cache, one folder per scheme and location (s3://BUCKET/PREFIX:
// work/s3/BUCKET/PREFIX).
func defaultWorkdir(loc string) (string, error) {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		base = filepath.Join(home, ".cache")
	}
	scheme, rest, _ := strings.Cut(loc, "://")
	return filepath.Join(base, "attachctl", "work", scheme, filepath.FromSlash(strings.Trim(rest, "/"))), nil
}

// readAllContext reads r to its end, or stops when ctx is done (a signal while resolve waits for
// a prompt on a pipe or a terminal); the read left behind ends with the process.
func readAllContext(ctx context.Context, r io.Reader) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(r)
		done <- result{b, err}
	}()
	select {
	case res := <-done:
		return res.b, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
