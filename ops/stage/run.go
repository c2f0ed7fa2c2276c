package stage

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/sniff"
	"golang.org/x/term"
)

// Input is where a stage takes its records from: its path arguments and the paths of a list
// (--files-from), walked and sniffed, when there are any; else a manifest. A command reads its
// flags into it; the stage's input is then decided here, not by the command.
type Input struct {
	// Paths are the path arguments.
	Paths []string
	// List, when set, lists more paths, one a line (NUL-terminated with Null).
	List io.Reader
	Null bool
	// Walk is how folders among the paths are walked.
	Walk sniff.WalkOptions
	// Failed, when set, is told of an entry the walk could not read (PathInput.Failed).
	Failed func(e *fault.Error)
}

// FromPaths reports whether the stage takes paths (arguments or a list) rather than a manifest:
// `attachctl upload a.png` is `attachctl sniff a.png | attachctl upload`.
func (in Input) FromPaths() bool { return len(in.Paths) > 0 || in.List != nil }

// Records yields the records of the paths when FromPaths (each to be sniffed first: sniffed is
// true), else those of the manifest m. stop is to be called once the records are no longer wanted.
func (in Input) Records(ctx context.Context, m ManifestInput) (next Next, sniffed bool, stop func()) {
	if in.FromPaths() {
		next, stop := PathRecords(PathInput{Paths: in.Paths, List: in.List, Null: in.Null, Walk: in.Walk, Failed: in.Failed})
		return next, true, stop
	}
	return ManifestRecords(ctx, m), false, func() {}
}

// NotReachedFailure is the one failure that tells of the records an interruption kept from the stage's
// work, or nil when there are none: they are said together at the end, not one line each.
func (r Result) NotReachedFailure(stage string) *fault.Error {
	if r.NotReached == 0 {
		return nil
	}
	what := fmt.Sprintf("%d records", r.NotReached)
	if r.RestUnread {
		what += " (the last one, path -, for the input not read)"
	}
	e := fault.Errorf(fault.UploadInterrupted, "interrupted: %s not reached, each passed on failed; run the same command again", what)
	e.Stage = stage
	return e
}

// Takes is what a command reads besides what it would read from a terminal: the hint before
// such a read names it.
type Takes int

const (
	// TakesPaths: paths as arguments, or a manifest piped in.
	TakesPaths Takes = iota
	// TakesIDs: upload ids or --all, or a manifest piped in.
	TakesIDs
	// TakesFile: a FILE argument, or the input piped in.
	TakesFile
)

// TakesOf is what a command takes, from the arguments its usage names ("[PATH...]", "[ID...]",
// "[FILE]").
func TakesOf(argsUsage string) Takes {
	switch {
	case strings.Contains(argsUsage, "PATH"):
		return TakesPaths
	case strings.Contains(argsUsage, "ID"):
		return TakesIDs
	}
	return TakesFile
}

// IsTerminal reports whether in is a terminal (through Interruptible's reader too).
func IsTerminal(in io.Reader) bool {
	f := InputFile(in)
	return f != nil && term.IsTerminal(int(f.Fd()))
}

// TerminalHint is the line to say before command reads what from in, when in is a terminal, so
// that `attachctl verify` typed alone does not wait without a word; "" when in is no terminal.
func TerminalHint(in io.Reader, command, what string, takes Takes) string {
	if !IsTerminal(in) {
		return ""
	}
	return hintLine(command, what, takes, runtime.GOOS)
}

// hintLine is TerminalHint's line on the system goos, whose terminals end input each their own way.
func hintLine(command, what string, takes Takes, goos string) string {
	eof := "Ctrl-D"
	if goos == "windows" {
		eof = "Ctrl-Z and Enter"
	}
	instead := "give a FILE, or pipe it in"
	switch takes {
	case TakesPaths:
		instead = "give paths as arguments, or pipe a manifest in"
	case TakesIDs:
		instead = "give upload ids or --all, or pipe a manifest in"
	}
	return fmt.Sprintf("attachctl: %s: reading %s from the terminal, end it with %s; or %s", command, what, eof, instead)
}
