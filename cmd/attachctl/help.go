package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/urfave/cli/v2"
)

// commandHelpTemplate is every command's help, `CMD --help` and `help CMD` alike: urfave/cli's
// subcommand template (which lists subcommands when there are any) and the exit codes.
var commandHelpTemplate = cli.SubcommandHelpTemplate + exitCodesHelp

// exitCodesHelp ends every help page: SPEC section 7's exit codes.
const exitCodesHelp = `
EXIT CODES:
   0         everything done
   1         some records or uploads failed; the others are done and written, each failure
             is on standard error and in its record's "error"
   2         bad usage (one line on standard error says what to fix), or input that is not
             a manifest or prompt; nothing was done
   10        the named store does not exist (verify, ls, rm, touch, resolve); sweep of a
             store that does not exist exits 0 with its line
   11        the store's lock was not had within --wait (another sweep or rm holds it; the
             message names its holder)
   130, 143  interrupted by SIGINT or SIGTERM
`

func init() {
	// A required flag has no default to show: say that it is required instead of "(default: 0)".
	plain := cli.FlagStringer
	cli.FlagStringer = func(f cli.Flag) string {
		s := plain(f)
		if r, ok := f.(cli.RequiredFlag); ok && r.IsRequired() {
			s = defaultText.ReplaceAllString(s, "") + " (required)"
		}
		return s
	}
}

var defaultText = regexp.MustCompile(` \(default: [^)]*\)$`)

// flagValueError is how Go's flag package reports a value it cannot parse.
var flagValueError = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-+([^:]+): (.*)$`)

// onUsageError turns urfave/cli's report of a bad flag value into one line that says what the flag
// takes (`--jobs x: takes a whole number`), printed without the help.
func onUsageError(c *cli.Context, err error, _ bool) error {
	m := flagValueError.FindStringSubmatch(err.Error())
	if m == nil {
		return &usage{msg: err.Error()}
	}
	value, name, why := m[1], m[2], m[3]
	switch findFlag(c.Command.Flags, name).(type) {
	case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag:
		why = "takes a whole number"
	case *cli.BoolFlag:
		why = "takes no value, or =true or =false"
	}
	return &usage{msg: fmt.Sprintf("%s %s: %s", dashed(name), value, why)}
}

// commandPath names the command a normalised command line runs, e.g. "attachctl upload begin".
func commandPath(app *cli.App, args []string) string {
	path := app.Name
	flags, subs := append(append([]cli.Flag(nil), app.Flags...), cli.VersionFlag), app.Commands
	for i := 1; i < len(args); i++ {
		t := args[i]
		if t == "--" {
			break
		}
		if strings.HasPrefix(t, "-") {
			name, _, hasValue := strings.Cut(strings.TrimLeft(t, "-"), "=")
			if f := findFlag(flags, name); f != nil && takesValue(f) && !hasValue {
				i++
			}
			continue
		}
		var next *cli.Command
		for _, c := range subs {
			if c.HasName(t) {
				next = c
			}
		}
		if next == nil {
			break
		}
		path += " " + next.Name
		flags, subs = next.Flags, next.Subcommands
	}
	return path
}
