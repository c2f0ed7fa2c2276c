package main

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/urfave/cli/v2"
)

// commandHelpTemplate is every command's help, `CMD --help` and `help CMD` alike: urfave/cli's
// subcommand template (which lists subcommands when there are any) with the command's own flags,
// where to read the global ones, and the exit codes.
var commandHelpTemplate = cli.SubcommandHelpTemplate + globalFlagsHint + exitCodesHelp

// globalFlagsHint stands for the global flags in a command's help: listing them there would repeat
// eight flags on every page.
const globalFlagsHint = `
GLOBAL FLAGS:
   --store, --jobs, --progress, --quiet and the --s3-* flags: see 'attachctl help global'
`

// globalHelp is `attachctl help global`: the flags every command takes, once.
func globalHelp(app *cli.App) string {
	var b strings.Builder
	b.WriteString("GLOBAL FLAGS:\n   Every command takes them, before or after its name (attachctl --store S upload =\n" +
		"   attachctl upload --store S).\n\n")
	w := tabwriter.NewWriter(&b, 1, 8, 2, ' ', 0) // as urfave/cli aligns its help
	for _, f := range app.Flags {
		fmt.Fprintf(w, "   %s\n", cli.FlagStringer(f))
	}
	w.Flush()
	return b.String()
}

func init() {
	// A required flag has no default to show: say that it is required instead of "(default: 0)".
	plain := cli.FlagStringer
	cli.FlagStringer = func(f cli.Flag) string {
		s := plain(f)
		if usage, ok := f.(cli.DocGenerationFlag); ok && namesDefault(usage.GetUsage()) {
			s = defaultText().ReplaceAllString(s, "") // said once, in the flag's own words
		}
		if r, ok := f.(cli.RequiredFlag); ok && r.IsRequired() {
			s = defaultText().ReplaceAllString(s, "") + " (required)"
		}
		return s
	}
}

var defaultText = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(` \(default: [^)]*\)$`) })

// namesDefault tells whether a flag's usage says its default itself ("default: no limit").
func namesDefault(usage string) bool { return strings.Contains(usage, "default: ") }

// flagValueError is how Go's flag package reports a value it cannot parse.
var flagValueError = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-+([^:]+): (.*)$`)
})

// onUsageError turns urfave/cli's report of a bad flag value into one line that says what the flag
// takes (`--jobs x: takes a whole number`), printed without the help.
func onUsageError(c *cli.Context, err error, _ bool) error {
	m := flagValueError().FindStringSubmatch(err.Error())
	if m == nil {
		return &usage{msg: err.Error()}
	}
	value, name, why := m[1], m[2], m[3]
	switch unwrapFlag(findFlag(c.Command.Flags, name)).(type) {
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
