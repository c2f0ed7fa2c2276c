package main

import (
	"context"
	"io"
	"os"
	"strings"
	"time"

	"github.com/attachctl/attachctl/ops/stage"
	"github.com/urfave/cli/v2"
)

// globals is what every command reads from its *cli.Context once, in its Action: the global
// flags (--store, --jobs, --progress, --quiet and the backends'), the standard streams, the run's
// context and the command's name. What runs below an Action takes it, or plain values, never the
// *cli.Context: a command's work then does not depend on how its flags were parsed, and reads
// each flag in one place.
type globals struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	// stderr is the app's ErrWriter: a line for a person goes above the progress bar.
	stderr io.Writer
	// name is the command that runs, without "attachctl" ("upload begin"; "attachctl" at the
	// top); cmd is its own name ("begin").
	name, cmd string
	// takes is what the command takes as arguments, named by the hint before a terminal is read.
	takes stage.Takes
	// store is --store, else $ATTACHCTL_STORE, as given: "" for the default store.
	store    string
	jobs     int
	progress string // auto, always or never (checked by checkGlobals)
	quiet    bool
	backends backendOptions
	// wait is how long the stores this command opens wait for their limits lock (0: the
	// store's default): --wait of the commands that add uploads, set by their Action.
	wait time.Duration
}

// globalOptions reads the global flags, the streams and the command's name from c. It is called
// by the Actions alone. The flags were checked by checkGlobals before the Action ran.
func globalOptions(c *cli.Context) globals {
	g := globals{
		ctx: c.Context, stdin: c.App.Reader, stdout: c.App.Writer, stderr: c.App.ErrWriter,
		name: strings.TrimPrefix(commandName(c), "attachctl "),
		jobs: globalInt(c, "jobs"), progress: globalString(c, "progress"), quiet: globalBool(c, "quiet"),
		store: globalString(c, "store"),
	}
	if g.store == "" {
		g.store = os.Getenv("ATTACHCTL_STORE")
	}
	if c.Command != nil {
		g.cmd, g.takes = c.Command.Name, stage.TakesOf(c.Command.ArgsUsage)
	}
	g.backends, _ = backendFlags(c)
	return g
}

// storeGiven reports whether the store was named (--store or ATTACHCTL_STORE), not the default.
func (g globals) storeGiven() bool { return g.store != "" }
