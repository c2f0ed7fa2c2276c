package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/stage"
	"github.com/attachctl/attachctl/ops/store/location"
	"github.com/attachctl/attachctl/sniff"
	"github.com/urfave/cli/v2"
)

// manifestFlag is the --manifest flag of every stage that reads a manifest.
var manifestFlag = &cli.StringFlag{Name: "manifest", Aliases: []string{"m"}, Usage: "read the manifest from `FILE` instead of standard input"}

// noHashFlag is sniff's --no-hash, also on stages that sniff their path arguments.
var noHashFlag = &cli.BoolFlag{Name: "no-hash", Usage: "read only what type detection needs; no BLAKE3"}

// walkFlags are the flags of how a stage finds its files: what a folder walk also skips, and a
// list of paths to take in place of (or after) the arguments.
var walkFlags = []cli.Flag{
	&cli.StringSliceFlag{Name: "exclude", Usage: "in folders, also skip files and folders whose name matches `GLOB` (repeatable)"},
	&cli.StringFlag{Name: "files-from", Usage: "also take the paths listed in `FILE` (- for standard input), one a line"},
	&cli.BoolFlag{Name: "null", Aliases: []string{"0"}, Usage: "with --files-from: each path ends in a NUL, as find -print0 writes them"},
	&cli.BoolFlag{Name: "each", Usage: "a folder gives one record per file (each with its rel), not one folder attachment"},
	&cli.BoolFlag{Name: "no-ignore", Usage: "in folders, also take what git ignores (.gitignore, .git/info/exclude)"},
}

// skipLines is how many skipped entries of one folder argument get their own line on standard
// error; the rest are counted in one line.
const skipLines = 20

// work is what a stage does to one record. An error it returns is set on the record with the
// stage's name; a record that already carries an error never reaches it.
type work func(rec *manifest.Record) error

// stageFlags are a stage's flags of where its records come from and how its path arguments are
// walked and sniffed, read once by its Action (stageOptions).
type stageFlags struct {
	args     []string
	manifest string // --manifest
	// walk: the command has the walkFlags, which come together.
	walk                 bool
	filesFrom            string
	null, each, noIgnore bool
	exclude              []string
	// workdir is --workdir (prepare's, with --resolve): a folder no walk enters.
	workdir       string
	noHash, pages bool
	// saysEmpty: the command says itself that its manifest had no records (prompt's --allow-empty).
	saysEmpty bool
}

// stageOptions reads the stageFlags the command has.
func stageOptions(c *cli.Context) stageFlags {
	f := stageFlags{args: c.Args().Slice(), manifest: c.String("manifest"), walk: hasFlag(c, "files-from"),
		null: c.Bool("null"), noHash: hasFlag(c, "no-hash") && c.Bool("no-hash"), pages: hasFlag(c, "pages") && c.Bool("pages"),
		saysEmpty: hasFlag(c, "allow-empty")}
	if hasFlag(c, "workdir") {
		f.workdir = c.String("workdir")
	}
	if f.walk {
		f.filesFrom, f.each, f.noIgnore, f.exclude = c.String("files-from"), c.Bool("each"), c.Bool("no-ignore"), c.StringSlice("exclude")
	}
	return f
}

// source yields the records a stage works on (stage.Input): its path arguments and --files-from
// sniffed, else the manifest from --manifest or standard input. The returned close is to be
// called at the end.
func source(g globals, f stageFlags) (next stage.Next, sniffed bool, closeFn func(), err error) {
	opts, list, closeList, err := walkOptions(g, f)
	if err != nil {
		return nil, false, nil, err
	}
	in := stage.Input{Paths: f.args, List: list, Null: f.null, Walk: opts, Failed: g.report}
	m := stage.ManifestInput{R: g.stdin, Stdin: true, Empty: func() { g.emptyInput(f.saysEmpty) }}
	closeIn := closeList
	if !in.FromPaths() {
		if name := f.manifest; name != "" && name != "-" {
			file, err := os.Open(name)
			if err != nil {
				return nil, false, nil, usageError("--manifest: %v", err)
			}
			m, closeIn = stage.ManifestInput{R: file}, func() { file.Close() }
		} else {
			g.terminalHint("a manifest")
		}
	}
	next, sniffed, stop := in.Records(g.ctx, m)
	return next, sniffed, func() { stop(); closeIn() }, nil
}

// walkOptions is the walk's options of f, and the --files-from list (nil without one) with its
// close.
func walkOptions(g globals, f stageFlags) (opts sniff.WalkOptions, list io.Reader, closeList func(), err error) {
	closeList = func() {}
	if opts, err = folderWalk(g, f); err != nil || !f.walk {
		return opts, nil, closeList, err
	}
	switch f.filesFrom {
	case "":
		if f.null {
			return opts, nil, nil, usageError("-0 (--null) goes with --files-from")
		}
	case "-":
		list = g.stdin
	default:
		file, err := os.Open(f.filesFrom)
		if err != nil {
			return opts, nil, nil, usageError("--files-from: %v", err)
		}
		list, closeList = file, func() { file.Close() }
	}
	return opts, list, closeList, nil
}

// folderWalk is how a folder is walked by f's walkFlags (all but --files-from), with each
// skipped entry told on standard error unless --quiet.
func folderWalk(g globals, f stageFlags) (opts sniff.WalkOptions, err error) {
	opts.Skipped = func(path, why string) {
		if !g.quiet {
			fmt.Fprintf(g.stderr, "attachctl: %s: skipped %s: %s\n", g.cmd, manifest.Quote(path), why)
		}
	}
	// The walk never enters the store, nor the work folder that resolve copies into.
	if dir, err := g.storeDir(); err == nil && location.Scheme(dir) == "" {
		opts.Avoid = append(opts.Avoid, sniff.Avoid{Path: dir, Why: "the store itself (a walk never enters it)"})
	}
	if f.workdir != "" {
		if dir, err := filepath.Abs(f.workdir); err == nil {
			opts.Avoid = append(opts.Avoid, sniff.Avoid{Path: dir, Why: "the work folder of --workdir (a walk never enters it)"})
		}
	}
	if !f.walk {
		return opts, nil
	}
	opts.SkipLines = skipLines
	opts.Each, opts.NoIgnore = f.each, f.noIgnore
	opts.Exclude = f.exclude
	if err := sniff.CheckExclude(opts.Exclude); err != nil {
		return opts, usageError("--exclude %v", err)
	}
	return opts, nil
}

// outputFailed is how a command ends when standard output cannot be written (a full disk, a
// closed pipe where SIGPIPE is ignored): the error on standard error, exit 1.
func outputFailed(command string, err error) error {
	return cli.Exit("attachctl: "+command+": "+err.Error(), exitFailed)
}

// runStage streams records through w with --jobs workers, in input order, to standard output.
// It returns exit 1 when any record carries an error at the end, exit 2 on a bad manifest (the
// records before the bad line have been written), and stops early when the run is interrupted.
func runStage(g globals, f stageFlags, stage string, w work) error {
	return loop{stage: stage, work: w, flags: f}.toStdout(g)
}

// collect runs the stage like runStage but returns the records in input order instead of writing
// them: prompt and prepare write one document, so they need every record first.
func collect(g globals, l loop) ([]*manifest.Record, error) {
	var recs []*manifest.Record
	l.emit = func(rec *manifest.Record) error {
		recs = append(recs, rec)
		return nil
	}
	_, err := l.run(g)
	return recs, err
}

// loop is a stage's record loop (stage.Loop) as the command runs it: its input from source (by
// its flags) unless next is set, path arguments sniffed first (with --no-hash when the command
// has it and it is set), --jobs workers, each new failure reported on standard error, a progress
// bar, and the loop's end mapped to the command's exit.
type loop struct {
	stage string
	flags stageFlags
	work  work
	emit  func(*manifest.Record) error
	// next, when set, replaces source (verify --all reads the store).
	next stage.Next
	// first, when set, is called before the first record that reaches work; an error from it
	// ends the loop and is returned (an exitError: a store that does not exist, exit 10).
	first func() error
	// reported, when set, means the stage tells of each failure itself (verify --format text), so
	// the loop does not also print it on standard error.
	reported bool
	// bar, when set, is the stage's own progress bar (in bytes); otherwise the loop draws one in files.
	bar *bar
	// headOnly sniffs path arguments by their head only: the stage's own pass reads every byte
	// anyway and finishes the sniff (sniff.Text), so that the file is read once.
	headOnly bool
	// settle, window, flight: stage.Loop's Settle, Window and Flight (the upload stage's batch).
	settle func(rec *manifest.Record)
	window int
	flight *stage.Flight
}

// toStdout runs the loop writing the records as a manifest on standard output, and returns exit 1
// when any record carries an error at the end.
func (l loop) toStdout(g globals) error {
	out := manifest.NewWriter(g.stdout)
	locked := false // a record failed because the store's lock was not had: exit 11
	l.emit = func(rec *manifest.Record) error {
		locked = locked || rec.Failed() && rec.Error.Code == fault.StoreLocked
		return out.Write(rec)
	}
	failed, err := l.run(g)
	if ferr := out.Flush(); err == nil && ferr != nil {
		err = outputFailed(l.stage, ferr)
	}
	if err == nil && failed > 0 {
		err = exitError{exitFailed}
		if locked {
			err = exitError{exitLocked}
		}
	}
	return err
}

// run returns how many records carry an error, and an exit error for a bad manifest (exit 2), a
// failed emit, or an interrupted run (exit 1).
func (l loop) run(g globals) (int, error) {
	next, sniffed := l.next, false
	if next == nil {
		var closeFn func()
		var err error
		if next, sniffed, closeFn, err = source(g, l.flags); err != nil {
			return 0, err
		}
		defer closeFn()
	}
	sl := stage.Loop{Stage: l.stage, Next: next, Work: l.work, Emit: l.emit, Jobs: g.jobs,
		First: l.first, Settle: l.settle, Window: l.window, Flight: l.flight}
	if sniffed || l.stage == "sniff" {
		opts := sniff.Options{NoHash: l.headOnly || l.flags.noHash, Folders: true, Keep: l.headOnly,
			Pages: l.flags.pages}
		opts.Folder, _ = folderWalk(g, l.flags) // checked by source already
		if sniffed {
			opts.Folder.Skipped = nil // the walk that found the folder told what it skips
		}
		sl.Sniff = &opts
	}
	if !l.reported {
		sl.Failed = g.report
	}
	bar := l.bar
	if bar == nil {
		bar = g.newBar(-1, l.stage, "files")
	}
	sl.Handed = bar.Record
	res, err := sl.Run(g.ctx)
	bar.Finish()
	if e := res.NotReachedFailure(l.stage); e != nil && !l.reported {
		g.report(e)
	}
	if err != nil {
		var done exitError
		if errors.As(err, &done) {
			return res.Failed, err // already said
		}
		if errors.Is(err, stage.ErrInterrupted) {
			return res.Failed, cli.Exit("attachctl: "+l.stage+": interrupted while reading its input", exitFailed)
		}
		if errors.Is(err, stage.ErrPlainPaths) {
			hint := "use 'attachctl sniff --files-from -'"
			if l.flags.walk {
				hint = "use --files-from -"
			}
			return res.Failed, usageError("%s: %s; paths go as arguments, or %s", l.stage, stage.ErrPlainPaths.Message, hint)
		}
		if e := fault.AsError(err, ""); e.Code == fault.ManifestInvalid {
			g.report(e)
			return res.Failed, exitError{exitUsage}
		}
		return res.Failed, cli.Exit("attachctl: "+l.stage+": "+err.Error(), exitFailed)
	}
	if res.Interrupted {
		return res.Failed, exitError{exitFailed}
	}
	return res.Failed, nil
}

// hasFlag reports whether the command defines the flag.
func hasFlag(c *cli.Context, name string) bool {
	for _, f := range c.Command.Flags {
		for _, n := range f.Names() {
			if n == name {
				return true
			}
		}
	}
	return false
}
