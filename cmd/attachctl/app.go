package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/stage"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/location"
	"github.com/urfave/cli/v2"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3" (scripts/release.sh); empty,
// the version is the module's from the build (versionOf).
var version = ""

// Exit codes of docs/errors.md.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
	// exitNoStore: the named store does not exist (verify, ls, rm, touch, resolve), so that a
	// support check on a mistyped --store never passes.
	exitNoStore = 10
	// exitLocked: the store's lock was not had within --wait.
	exitLocked = 11
)

// exitError ends a command with an exit code. Its message, if any, has already been printed.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// usageError is exit 2 with one line saying what to fix; the hint line naming the command's help
// is added when it is printed.
func usageError(format string, args ...any) error {
	return &usage{msg: fmt.Sprintf(format, args...)}
}

// commands is filled by each command's file with register, in its init.
var commands []*cli.Command

func register(c *cli.Command) { commands = append(commands, c) }

// globalFlags are accepted before and after the command name.
func globalFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "store", Usage: "the store folder `DIR`: one chat's uploads (default $ATTACHCTL_STORE, else $XDG_STATE_HOME/attachctl/uploads, else ~/.local/state/attachctl/uploads)"},
		&cli.IntFlag{Name: "jobs", Value: runtime.NumCPU(), DefaultText: "the number of CPUs", Usage: "`N` records worked at once"},
		&cli.StringFlag{Name: "progress", Value: "auto", Usage: "progress bar on standard error `WHEN`: auto (when it is a terminal), always or never"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress bar and no summary; errors are still printed"},
	}, storeFlags()...)
}

// signalled holds the signal that asked the run to stop, for the exit code 128+N.
var signalled atomic.Int32

func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	cmds := make([]*cli.Command, len(commands))
	for i, c := range commands {
		cmds[i] = withGlobalFlags(c)
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	app := &cli.App{
		Name:  "attachctl",
		Usage: "prepare files for agent prompts, offline",
		Description: "Every command reads and writes one manifest (JSON Lines), so commands compose in\n" +
			"pipelines. Flags may stand before or after paths; -- ends them. 'attachctl help CMD'\n" +
			"shows a command's flags, examples and exit codes; 'attachctl help global' the flags every\n" +
			"command takes.\n\n" +
			example("attachctl sniff shots/*.png report.pdf | attachctl shrink \\",
				"  | attachctl upload --store ~/.local/state/attachctl/chat-42 \\",
				"  | attachctl prompt --text \"What changed between these?\" > prompt.json",
				"attachctl prepare --store ~/.local/state/attachctl/chat-42 --resolve shots/   # what the agent gets",
				"attachctl sweep --store ~/.local/state/attachctl/chat-42 --older-than 7d   # from cron"),
		CustomAppHelpTemplate: cli.AppHelpTemplate + exitCodesHelp,
		Version:               versionOf(readBuildInfo()),
		Flags:                 globalFlags(),
		Commands:              cmds,
		Reader:                stdin,
		Writer:                stdout,
		ErrWriter:             messagesTo(stderr),
		Suggest:               true,
		OnUsageError:          onUsageError,
		// --exclude takes globs, and a comma is a character of a name, not a list separator.
		DisableSliceFlagSeparator: true,
		ExitErrHandler:            func(*cli.Context, error) {}, // run decides the exit code
		Before: func(c *cli.Context) error {
			return checkGlobals(c)
		},
	}
	keepFlagNames(app)
	return app
}

// withGlobalFlags returns a copy of the registered command (so that an app can be made more than
// once in a process) with the global flags added, and checked, on it and its subcommands.
func withGlobalFlags(orig *cli.Command) *cli.Command {
	cp := *orig
	c := &cp
	// A command's help shows its own flags; the global ones are taken on it too, but shown once,
	// by `attachctl help global` (and `attachctl --help`, and the man page).
	c.Flags = append(append([]cli.Flag(nil), orig.Flags...), hidden(globalFlags())...)
	before := c.Before
	c.Before = func(cc *cli.Context) error {
		if err := checkGlobals(cc); err != nil {
			return err
		}
		if before != nil {
			return before(cc)
		}
		return nil
	}
	c.OnUsageError = onUsageError
	c.CustomHelpTemplate = commandHelpTemplate
	c.HideHelpCommand = true // `help CMD` is CMD --help (normalizeArgs); no "help" among the subcommands
	c.Subcommands = make([]*cli.Command, len(orig.Subcommands))
	for i, sub := range orig.Subcommands {
		c.Subcommands[i] = withGlobalFlags(sub)
	}
	return c
}

// hidden marks flags hidden from a command's help; they are still taken.
func hidden(flags []cli.Flag) []cli.Flag {
	for _, f := range flags {
		switch f := f.(type) {
		case *cli.StringFlag:
			f.Hidden = true
		case *cli.IntFlag:
			f.Hidden = true
		case *cli.BoolFlag:
			f.Hidden = true
		default:
			panic(fmt.Sprintf("hidden: a global flag of type %T", f))
		}
	}
	return flags
}

func checkGlobals(c *cli.Context) error {
	switch p := globalString(c, "progress"); p {
	case "auto", "always", "never":
	default:
		return usageError("--progress takes auto, always or never, not %q", p)
	}
	if j := globalInt(c, "jobs"); j < 1 {
		return usageError("--jobs takes a whole number of at least 1, not %d", j)
	}
	return checkStoreFlags(c)
}

// run is main without the exit, for testscript.
func run(args []string) int { return runWith(args, os.Stdin, os.Stdout, os.Stderr) }

// runWith runs attachctl with the given arguments and standard streams and returns its exit code.
func runWith(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// The signal is recorded before the run is told to stop, so that the exit code is 128+N.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		select {
		case s := <-sigs:
			if n, ok := s.(syscall.Signal); ok {
				signalled.Store(int32(n))
			}
			cancel()
		case <-ctx.Done():
		}
	}()
	app := newApp(stage.Interruptible(ctx, stdin), stdout, stderr)
	if completionRequest(app, args, stdout) {
		return exitOK
	}
	args, err := normalizeArgs(app, args)
	if errors.Is(err, errHelpGlobal) {
		if _, err := io.WriteString(stdout, globalHelp(app)); err != nil {
			return exitCode(outputFailed("help", err), stderr, app.Name)
		}
		return exitOK
	}
	if err == nil {
		err = app.RunContext(ctx, args)
	}
	code := exitCode(err, app.ErrWriter, commandPath(app, args))
	if n := signalled.Load(); n != 0 && code != exitOK {
		return 128 + int(n)
	}
	return code
}

// exitCode prints err, unless it has been printed, and returns the exit code it stands for. path
// names the command that ran ("attachctl upload begin"), for the hint under a usage error.
func exitCode(err error, stderr io.Writer, path string) int {
	if err == nil {
		return exitOK
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var u *usage
	if errors.As(err, &u) {
		if u.help == "" {
			u.help = path
		}
		fmt.Fprintf(stderr, "attachctl: %s\nsee '%s --help'\n", escapeLine(u.msg), u.help)
		return exitUsage
	}
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		if msg := err.Error(); msg != "" {
			fmt.Fprintln(stderr, escapeLine(msg))
		}
		return ec.ExitCode()
	}
	// Anything else urfave/cli returns is a usage error.
	fmt.Fprintf(stderr, "attachctl: %s\nsee '%s --help'\n", escapeLine(err.Error()), path)
	return exitUsage
}

// The global flags may stand before or after the command name: the innermost one set wins.
func setIn(c *cli.Context, name string) *cli.Context {
	for _, cc := range c.Lineage() {
		for _, n := range cc.LocalFlagNames() {
			if n == name {
				return cc
			}
		}
	}
	return c
}

func globalString(c *cli.Context, name string) string { return setIn(c, name).String(name) }
func globalInt(c *cli.Context, name string) int       { return setIn(c, name).Int(name) }
func globalBool(c *cli.Context, name string) bool     { return setIn(c, name).Bool(name) }

// storeDir is --store, else $ATTACHCTL_STORE, else the XDG state default, made absolute; an
// s3:// URI as given.
func (g globals) storeDir() (string, error) {
	dir := g.store
	if location.Scheme(dir) != "" {
		return dir, nil
	}
	if dir == "" {
		base := os.Getenv("XDG_STATE_HOME")
		if base == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", usageError("no --store given and no home folder: %v", err)
			}
			base = filepath.Join(home, ".local", "state")
		}
		dir = filepath.Join(base, "attachctl", "uploads")
	}
	return filepath.Abs(dir)
}

// report prints one failure on standard error: "attachctl: COMMAND: MESSAGE (CODE)", labelled
// with the command that prints it, whatever stage the failure came from: a step of this command
// that has a name of its own is said after it ("attachctl: prepare: shrink: ..."), so that a line
// in a pipeline's shared standard error tells which process wrote it.
func (g globals) report(e *fault.Error) {
	label := g.name
	switch {
	case label == "attachctl" && e.Stage != "":
		label = e.Stage
	case e.Stage != "" && e.Stage != label && !slices.Contains(strings.Fields(label), e.Stage):
		label += ": " + e.Stage
	}
	personLine(g.stderr, fmt.Sprintf("attachctl: %s: %s", label, escapeLine(e.Error())))
}

// summary prints a line on standard error unless --quiet.
func (g globals) summary(format string, args ...any) {
	if g.quiet {
		return
	}
	personLine(g.stderr, "attachctl: "+escapeLine(fmt.Sprintf(format, args...)))
}

// example formats a command's help text with an example.
func example(lines ...string) string {
	return "Example:\n   " + strings.Join(lines, "\n   ")
}

// storeWhenNeeded opens the store named by the flags at the first record that needs it, not when
// the command starts: in `attachctl upload | attachctl touch` both start at once, and the store
// may not exist until upload has made it, which it has by the time its first record arrives.
func (g globals) storeWhenNeeded() (func() (store.Backend, error), error) {
	dir, err := g.storeDir()
	if err != nil {
		return nil, err
	}
	return sync.OnceValues(func() (store.Backend, error) { return g.openStore(dir) }), nil
}
