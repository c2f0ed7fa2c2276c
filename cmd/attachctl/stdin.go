package main

import (
	"fmt"
	"strings"

	"github.com/attachctl/attachctl/ops/stage"
	"github.com/urfave/cli/v2"
)

// terminalHint says, on standard error, that the command is about to read what from a terminal
// (stage.TerminalHint), unless --quiet.
func (g globals) terminalHint(what string) {
	if g.quiet {
		return
	}
	if line := stage.TerminalHint(g.stdin, g.name, what, g.takes); line != "" {
		fmt.Fprintln(g.stderr, line)
	}
}

// emptyInput says, on standard error, that standard input ended before its first record: in
// `attachctl sniff --nohash docs | attachctl shrink` the first stage failed, and each stage after
// it says that it had nothing to do. A command that says it itself (prompt) has saysEmpty.
func (g globals) emptyInput(saysEmpty bool) {
	if g.quiet || saysEmpty {
		return
	}
	fmt.Fprintf(g.stderr, "attachctl: %s: the manifest on standard input is empty: no records (did a stage before this one fail?)\n", g.name)
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
