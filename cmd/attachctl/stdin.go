package main

import (
	"fmt"
	"strings"

	"github.com/attachctl/attachctl/ops/stage"
	"github.com/urfave/cli/v2"
)

// terminalHint says, on standard error, that the command is about to read what from a terminal
// (stage.TerminalHint), unless --quiet.
func terminalHint(c *cli.Context, what string) {
	if globalBool(c, "quiet") {
		return
	}
	name := strings.TrimPrefix(commandName(c), "attachctl ")
	if line := stage.TerminalHint(c.App.Reader, name, what, stage.TakesOf(c.Command.ArgsUsage)); line != "" {
		fmt.Fprintln(c.App.ErrWriter, line)
	}
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
