package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
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

// source yields the records a stage works on: its path arguments and --files-from sniffed (so
// that `attachctl upload a.png` is `attachctl sniff a.png | attachctl upload`), else the manifest
// from --manifest or standard input. The returned close is to be called at the end.
func source(c *cli.Context) (next func() (*manifest.Record, bool, error), sniffed bool, closeFn func(), err error) {
	opts, list, closeList, err := walkOptions(c)
	if err != nil {
		return nil, false, nil, err
	}
	if c.Args().Present() || list != nil {
		next, stop := walkSource(c, c.Args().Slice(), list, opts)
		return next, true, func() { stop(); closeList() }, nil
	}
	var in io.Reader = c.App.Reader
	closeFn = func() {}
	fromStdin := true
	if name := c.String("manifest"); name != "" && name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, false, nil, usageError("--manifest: %v", err)
		}
		in, closeFn, fromStdin = f, func() { f.Close() }, false
	}
	if fromStdin {
		terminalHint(c, "a manifest")
	}
	br := bufio.NewReader(in)
	r := manifest.NewReader(br)
	first, records := true, 0
	return func() (*manifest.Record, bool, error) {
		if first && fromStdin {
			first = false
			if looksLikePaths(br) {
				return nil, false, errPlainPaths
			}
		}
		rec, err := r.Next()
		if err == io.EOF {
			if records == 0 && fromStdin {
				emptyInput(c)
			}
			return nil, false, nil
		}
		if err != nil && c.Context.Err() != nil {
			return nil, false, errInterrupted
		}
		records++
		return rec, err == nil, err
	}, false, closeFn, nil
}

// errPlainPaths is standard input that holds lines of plain text where a manifest was expected:
// `ls | attachctl sniff`.
var errPlainPaths = fault.Errorf(fault.ManifestInvalid, "standard input is not a manifest (not JSON)")

// looksLikePaths reports whether the input starts with something other than JSON: the first
// byte that is not white space is neither '{' nor '[' (a JSON array is named by the manifest
// reader). It reads nothing away from the reader.
func looksLikePaths(br *bufio.Reader) bool {
	for n := 1; n <= 4096; n *= 2 {
		b, err := br.Peek(n)
		if t := bytes.TrimLeft(b, " \t\r\n"); len(t) > 0 {
			return t[0] != '{' && t[0] != '['
		}
		if err != nil {
			return false
		}
	}
	return false
}

// walkOptions reads the walkFlags the command has: the walk's options, and the --files-from list
// (nil without one) with its close.
func walkOptions(c *cli.Context) (opts sniff.WalkOptions, list io.Reader, closeList func(), err error) {
	closeList = func() {}
	if opts, err = folderWalk(c); err != nil || !hasFlag(c, "files-from") {
		return opts, nil, closeList, err
	}
	switch from := c.String("files-from"); from {
	case "":
		if c.Bool("null") {
			return opts, nil, nil, usageError("-0 (--null) goes with --files-from")
		}
	case "-":
		list = c.App.Reader
	default:
		f, err := os.Open(from)
		if err != nil {
			return opts, nil, nil, usageError("--files-from: %v", err)
		}
		list, closeList = f, func() { f.Close() }
	}
	return opts, list, closeList, nil
}

// folderWalk reads the walkFlags that say how a folder is walked (all but --files-from), with
// each skipped entry told on standard error unless --quiet.
func folderWalk(c *cli.Context) (opts sniff.WalkOptions, err error) {
	opts.Skipped = func(path, why string) {
		if !globalBool(c, "quiet") {
			fmt.Fprintf(c.App.ErrWriter, "attachctl: %s: skipped %s: %s\n", c.Command.Name, manifest.Quote(path), why)
		}
	}
	// The walk never enters the store, nor the work folder that resolve copies into.
	if dir, err := storeDir(c); err == nil && location.Scheme(dir) == "" {
		opts.Avoid = append(opts.Avoid, sniff.Avoid{Path: dir, Why: "the store itself (a walk never enters it)"})
	}
	if hasFlag(c, "workdir") && c.String("workdir") != "" {
		if dir, err := filepath.Abs(c.String("workdir")); err == nil {
			opts.Avoid = append(opts.Avoid, sniff.Avoid{Path: dir, Why: "the work folder of --workdir (a walk never enters it)"})
		}
	}
	if !hasFlag(c, "files-from") { // the walkFlags come together
		return opts, nil
	}
	opts.SkipLines = skipLines
	opts.Each, opts.NoIgnore = c.Bool("each"), c.Bool("no-ignore")
	opts.Exclude = c.StringSlice("exclude")
	if err := sniff.CheckExclude(opts.Exclude); err != nil {
		return opts, usageError("--exclude %v", err)
	}
	return opts, nil
}

// walkSource walks the paths, then those of list (when not nil), lexical order within folders,
// and yields one path-only record per file, or a record with the walk's error (reported here: no
// later stage says it). The walk runs as a coroutine of the caller (iter.Pull), so yielding a path
// costs no goroutine hand-off.
func walkSource(c *cli.Context, paths []string, list io.Reader, opts sniff.WalkOptions) (func() (*manifest.Record, bool, error), func()) {
	var listErr error
	walk := func(yield func(*manifest.Record) bool) {
		each := func(e sniff.Entry) error {
			rec := &manifest.Record{Path: e.Path, Rel: e.Rel}
			if e.Err != nil {
				report(c, rec.Fail("sniff", e.Err, fault.FileUnreadable))
			} else if e.Regular {
				rec.Sniffed = sniff.Listed{}
			}
			if !yield(rec) {
				return errStopWalk
			}
			return nil
		}
		if sniff.WalkEntries(paths, opts, each) != nil || list == nil {
			return
		}
		err := sniff.ReadPaths(list, c.Bool("null"), func(path string) error {
			return sniff.WalkEntries([]string{path}, opts, each)
		})
		if err != errStopWalk {
			listErr = err
		}
	}
	next, stop := iter.Pull(walk)
	return func() (*manifest.Record, bool, error) {
		rec, ok := next()
		if !ok {
			return nil, false, listErr
		}
		return rec, ok, nil
	}, stop
}

var errStopWalk = errors.New("walk stopped")

// outputFailed is how a command ends when standard output cannot be written (a full disk, a
// closed pipe where SIGPIPE is ignored): the error on standard error, exit 1.
func outputFailed(command string, err error) error {
	return cli.Exit("attachctl: "+command+": "+err.Error(), exitFailed)
}

// runStage streams records through w with --jobs workers, in input order, to standard output.
// It returns exit 1 when any record carries an error at the end, exit 2 on a bad manifest (the
// records before the bad line have been written), and stops early when the run is interrupted.
func runStage(c *cli.Context, stage string, w work) error {
	return loop{stage: stage, work: w}.toStdout(c)
}

// collect runs the stage like runStage but returns the records in input order instead of writing
// them: prompt and prepare write one document, so they need every record first.
func collect(c *cli.Context, l loop) ([]*manifest.Record, error) {
	var recs []*manifest.Record
	l.emit = func(rec *manifest.Record) error {
		recs = append(recs, rec)
		return nil
	}
	_, err := l.run(c)
	return recs, err
}

// loop is the one record loop of every stage: it takes the records of next (default source(c)),
// sniffs them first when they came as path arguments (with --no-hash when the command has it and
// it is set), runs work on each that carries no error with --jobs workers, reports each new
// failure on standard error, and hands every record to emit in input order.
type loop struct {
	stage string
	work  work
	emit  func(*manifest.Record) error
	// next, when set, replaces source(c) (verify --all reads the store).
	next func() (*manifest.Record, bool, error)
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
	// settle, when set, is called on each record that carries no error just before it is handed
	// on, in input order; it may fail the record. The upload stage commits its batch there, so
	// that no record names an upload that is not finished yet.
	settle func(rec *manifest.Record)
	// window, when set, is how many records may be in flight (taken and not yet handed on): the
	// upload stage's batch commits what was built by the time a record is handed on, so its
	// window is its batch size.
	window int
	// flight, when set, counts the records taken and handed on (for the upload batch's More).
	flight *flight
}

// flight counts a loop's records in flight: taken from the input and not yet handed on.
type flight struct {
	taken, worked, emitted atomic.Int64
	ended                  atomic.Bool
	wake                   func() // called when the input ends, and when a record's work ends
}

func (f *flight) took() {
	if f != nil {
		f.taken.Add(1)
	}
}

// done counts a record whose work ended (uploaded, or failed before).
func (f *flight) done() {
	if f != nil {
		f.worked.Add(1)
		if f.wake != nil {
			f.wake()
		}
	}
}

func (f *flight) handed() {
	if f != nil {
		f.emitted.Add(1)
	}
}

func (f *flight) end() {
	if f != nil && !f.ended.Swap(true) && f.wake != nil {
		f.wake()
	}
}

// more reports whether more records may still reach the stage's work: one taken is still being
// worked on (sniffed, say, and not yet uploaded), or the input has not ended and fewer than window
// are in flight.
func (f *flight) more(window int) bool {
	taken := f.taken.Load()
	return taken > f.worked.Load() || !f.ended.Load() && taken-f.emitted.Load() < int64(window)
}

// toStdout runs the loop writing the records as a manifest on standard output, and returns exit 1
// when any record carries an error at the end.
func (l loop) toStdout(c *cli.Context) error {
	out := manifest.NewWriter(c.App.Writer)
	locked := false // a record failed because the store's lock was not had: exit 11
	l.emit = func(rec *manifest.Record) error {
		locked = locked || rec.Failed() && rec.Error.Code == fault.StoreLocked
		return out.Write(rec)
	}
	failed, err := l.run(c)
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
func (l loop) run(c *cli.Context) (int, error) {
	next, sniffed := l.next, false
	if next == nil {
		var closeFn func()
		var err error
		if next, sniffed, closeFn, err = source(c); err != nil {
			return 0, err
		}
		defer closeFn()
	}
	opts := sniff.Options{NoHash: l.headOnly || hasFlag(c, "no-hash") && c.Bool("no-hash"), Folders: true, Keep: l.headOnly,
		Pages: hasFlag(c, "pages") && c.Bool("pages")}
	opts.Folder, _ = folderWalk(c) // checked by source already
	if sniffed {
		opts.Folder.Skipped = nil // the walk that found the folder told what it skips
	}
	do := func(rec *manifest.Record) error {
		if sniffed || l.stage == "sniff" {
			if err := sniff.Fill(rec, opts); err != nil {
				rec.Fail("sniff", err, fault.FileUnreadable)
				return nil
			}
		}
		if l.work == nil {
			return nil
		}
		return l.work(rec)
	}
	bar := l.bar
	if bar == nil {
		bar = newBar(c, -1, l.stage, "files")
	}
	failed := 0
	ctx := c.Context
	// A worker that hands a record on may wait in settle for its batch to fill: the loop then
	// has one worker more than --jobs, and at most --jobs of them work on records at once, so
	// that the others go on while one waits (with --jobs 1 the batch would otherwise hold one
	// upload, and one worker would do all the work while another waits).
	jobs, gate := globalInt(c, "jobs"), chan struct{}(nil)
	if l.settle != nil {
		gate = make(chan struct{}, max(jobs, 1))
		jobs = max(jobs, 1) + 1
	}
	restMarked, notReached := false, 0
	err := manifest.OrderedWindow(jobs, l.window,
		func() (*manifest.Record, bool, error) {
			if ctx.Err() != nil {
				// Interrupted: the records not reached are passed on, each failed, so that a
				// later stage (prompt) fails rather than make a prompt without them. They are
				// told on standard error in one line at the end, not one each.
				rec, ok, err := next()
				if err != nil && !restMarked { // the rest of the input cannot be read
					restMarked, rec, ok = true, &manifest.Record{Path: "-", Name: "-"}, true
					rec.Fail(l.stage, fault.Errorf(fault.UploadInterrupted, "the rest of the input: not read, interrupted before it; run the same command again"), "")
					notReached++
				} else if ok && !rec.Failed() {
					rec.Fail(l.stage, fault.Errorf(fault.UploadInterrupted, "%s: not reached: interrupted before it; run the same command again", rec.Path), "")
					notReached++
				}
				if !ok || err != nil && rec == nil {
					l.flight.end()
					return nil, false, nil
				}
				l.flight.took()
				return rec, true, nil
			}
			rec, ok, err := next()
			if ok && err == nil && !rec.Failed() && l.first != nil {
				if ferr := l.first(); ferr != nil {
					l.flight.end()
					return nil, false, ferr
				}
			}
			if ok {
				l.flight.took()
			} else {
				l.flight.end()
			}
			return rec, ok, err
		},
		func(rec *manifest.Record) *manifest.Record {
			if !rec.Failed() {
				if gate != nil {
					gate <- struct{}{}
				}
				err := do(rec)
				if gate != nil {
					<-gate
				}
				if err != nil && !rec.Failed() {
					rec.Fail(l.stage, err, fault.FileUnreadable)
				}
				if rec.Failed() && !l.reported {
					report(c, rec.Error)
				}
			}
			l.flight.done()
			return rec
		},
		func(rec *manifest.Record) error {
			if l.settle != nil && !rec.Failed() {
				if l.settle(rec); rec.Failed() && !l.reported {
					report(c, rec.Error)
				}
			}
			if rec.Failed() {
				failed++
			}
			bar.Record(rec)
			defer l.flight.handed()
			return l.emit(rec)
		})
	bar.Finish()
	if notReached > 0 && !l.reported {
		what := fmt.Sprintf("%d records", notReached)
		if restMarked {
			what += " (the last one, path -, for the input not read)"
		}
		e := fault.Errorf(fault.UploadInterrupted, "interrupted: %s not reached, each passed on failed; run the same command again", what)
		e.Stage = l.stage
		report(c, e)
	}
	if err != nil {
		var done exitError
		if errors.As(err, &done) {
			return failed, err // already said
		}
		if errors.Is(err, errInterrupted) {
			return failed, cli.Exit("attachctl: "+l.stage+": interrupted while reading its input", exitFailed)
		}
		if errors.Is(err, errPlainPaths) {
			hint := "use 'attachctl sniff --files-from -'"
			if hasFlag(c, "files-from") {
				hint = "use --files-from -"
			}
			return failed, usageError("%s: %s; paths go as arguments, or %s", l.stage, errPlainPaths.Message, hint)
		}
		if e := fault.AsError(err, ""); e.Code == fault.ManifestInvalid {
			report(c, e)
			return failed, exitError{exitUsage}
		}
		return failed, cli.Exit("attachctl: "+l.stage+": "+err.Error(), exitFailed)
	}
	if ctx.Err() != nil {
		return failed, exitError{exitFailed}
	}
	return failed, nil
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
