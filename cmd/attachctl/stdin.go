package main

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/attachctl/attachctl/ops/stage"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// terminalInput reports whether standard input is a terminal.
func terminalInput(c *cli.Context) bool {
	f := stage.InputFile(c.App.Reader)
	return f != nil && term.IsTerminal(int(f.Fd()))
}

// eofKey is how a person ends input typed at a terminal.
func eofKey() string {
	if runtime.GOOS == "windows" {
		return "Ctrl-Z and Enter"
	}
	return "Ctrl-D"
}

// terminalHint says, on standard error, that the command is about to read what from a terminal,
// so that `attachctl verify` typed alone does not wait without a word.
func terminalHint(c *cli.Context, what string) {
	if globalBool(c, "quiet") || !terminalInput(c) {
		return
	}
	name := strings.TrimPrefix(commandName(c), "attachctl ")
	var instead string
	switch args := c.Command.ArgsUsage; {
	case strings.Contains(args, "PATH"):
		instead = "give paths as arguments, or pipe a manifest in"
	case strings.Contains(args, "ID"):
		instead = "give upload ids or --all, or pipe a manifest in"
	default:
		instead = "give a FILE, or pipe it in"
	}
	fmt.Fprintf(c.App.ErrWriter, "attachctl: %s: reading %s from the terminal, end it with %s; or %s\n", name, what, eofKey(), instead)
}

// emptyInput says, on standard error, that standard input ended before its first record: in
// `attachctl sniff --nohash docs | attachctl shrink` the first stage failed, and each stage after
// it says that it had nothing to do.
func emptyInput(c *cli.Context) {
	if globalBool(c, "quiet") || hasFlag(c, "allow-empty") { // prompt says it itself
		return
	}
	fmt.Fprintf(c.App.ErrWriter, "attachctl: %s: the manifest on standard input is empty: no records (did a stage before this one fail?)\n",
		strings.TrimPrefix(commandName(c), "attachctl "))
}

// commandName is the command that runs, as "attachctl upload begin".
func commandName(c *cli.Context) string {
	var names []string
	for _, cc := range c.Lineage() {
		if cc.Command != nil && cc.Command.Name != "" {
			names = append([]string{cc.Command.Name}, names...)
		}
	}
	if len(names) == 0 || names[0] != "attachctl" {
		names = append([]string{"attachctl"}, names...)
	}
	return strings.Join(names, " ")
}
