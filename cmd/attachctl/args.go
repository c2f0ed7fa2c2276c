package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
	"github.com/xrash/smetrics"
)

// usage is a usage error found before anything runs: one line saying what to fix, and a hint
// naming the help to read. It is printed on standard error and ends the run with exit 2.
type usage struct {
	msg  string // without the "attachctl: " prefix
	help string // the command line whose --help explains, e.g. "attachctl sniff"
}

func (u *usage) Error() string { return u.msg }

// normalizeArgs checks the command line against the commands' flags before urfave/cli sees it, and
// rewrites it so that flags may follow paths, as with GNU tools: at each level (the app, a
// command, a subcommand) the flags, with their values, move before the positional arguments, which
// follow a "--" so that none of them is ever taken for a flag. "--" ends the flags. It also turns
// `help CMD [SUB]` into `CMD [SUB] --help`, so that both print the same.
//
// urfave/cli alone stops at the first positional argument (`upload a.png --store S` uploads
// "--store" and "S" as files) and prints the whole help on standard output for an unknown flag or
// a missing required one; everything that it would get wrong is caught here instead, with one
// line on standard error and exit 2, before anything is done.
func normalizeArgs(app *cli.App, args []string) ([]string, error) {
	if len(args) == 0 {
		return args, nil
	}
	root := &cli.Command{Name: app.Name, Flags: append(append([]cli.Flag(nil), app.Flags...), cli.VersionFlag), Subcommands: app.Commands}
	return levelArgs(app.Name, root, []string{args[0]}, args[1:]) // never appends into args
}

// levelArgs rewrites the arguments of one level: cmd (named by path, e.g. "attachctl upload") was
// given tokens; out holds what precedes them.
func levelArgs(path string, cmd *cli.Command, out, tokens []string) ([]string, error) {
	var flags, pos []string
	seen := map[string]bool{}
	for i := 0; i < len(tokens); i++ {
		t := tokens[i]
		if t == "--" {
			pos = append(pos, tokens[i+1:]...)
			break
		}
		if len(t) > 1 && t[0] == '-' {
			name, _, hasValue := strings.Cut(strings.TrimLeft(t, "-"), "=")
			f := findFlag(cmd.Flags, name)
			if f == nil || strings.HasPrefix(t, "---") {
				return nil, unknownFlag(path, cmd, t)
			}
			flags = append(flags, t)
			if takesValue(f) {
				_, value, _ := strings.Cut(t, "=")
				if !hasValue {
					if i+1 == len(tokens) {
						return nil, &usage{fmt.Sprintf("%s needs a value", dashed(f.Names()[0])), path}
					}
					i++
					value = tokens[i]
					flags = append(flags, value)
				}
				if err := checkChoice(path, cmd, f, value); err != nil {
					return nil, err
				}
			}
			seen[f.Names()[0]] = true
			continue
		}
		if len(pos) == 0 && len(cmd.Subcommands) > 0 {
			if t == "help" || t == "h" && path == cmd.Name {
				if path == cmd.Name && slices.Equal(positionals(cmd, tokens[i+1:]), []string{"global"}) {
					// A topic, not a command: global flags may come before or after it
					// (`attachctl --quiet help global`), as with every command.
					return nil, errHelpGlobal
				}
				// `help CMD [SUB]` is `CMD [SUB] --help`; `help` alone is the level's own help.
				rest := append(append([]string(nil), tokens[i+1:]...), "--help")
				return levelArgs(path, cmd, append(out, flags...), rest)
			}
			sub := cmd.Command(t)
			if sub == nil && path == cmd.Name {
				return nil, unknownCommand(path, cmd, t)
			}
			if sub != nil {
				return levelArgs(path+" "+sub.Name, sub, append(append(out, flags...), t), tokens[i+1:])
			}
		}
		pos = append(pos, t)
	}
	if !seen["help"] {
		for _, f := range cmd.Flags {
			if r, ok := f.(cli.RequiredFlag); ok && r.IsRequired() && !seen[f.Names()[0]] {
				return nil, &usage{fmt.Sprintf("%s needs %s", strings.TrimPrefix(path, "attachctl "), flagWithValue(f)), path}
			}
		}
	}
	out = append(out, flags...)
	if len(pos) > 0 && cmd.Command(pos[0]) != nil {
		// A file named like a subcommand, given after --: urfave/cli would run the subcommand.
		pos = append([]string{"./" + pos[0]}, pos[1:]...)
	}
	if len(pos) > 0 {
		out = append(append(out, "--"), pos...)
	}
	return out, nil
}

// errHelpGlobal is `attachctl help global`, with any global flags: run prints the global flags.
var errHelpGlobal = errors.New("help global")

// positionals is what of tokens is neither a flag of cmd nor a flag's value.
func positionals(cmd *cli.Command, tokens []string) []string {
	var pos []string
	for i := 0; i < len(tokens); i++ {
		t := tokens[i]
		if t == "--" {
			return append(pos, tokens[i+1:]...)
		}
		if len(t) > 1 && t[0] == '-' {
			name, _, hasValue := strings.Cut(strings.TrimLeft(t, "-"), "=")
			if f := findFlag(cmd.Flags, name); f != nil && takesValue(f) && !hasValue {
				i++
			}
			continue
		}
		pos = append(pos, t)
	}
	return pos
}

// findFlag returns the flag of flags (or the help flag) that has name, or nil.
func findFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	for _, n := range cli.HelpFlag.Names() {
		if n == name {
			return cli.HelpFlag
		}
	}
	return nil
}

func takesValue(f cli.Flag) bool {
	d, ok := f.(cli.DocGenerationFlag)
	return ok && d.TakesValue()
}

func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// flagWithValue is "--name VALUE" as the help shows it.
func flagWithValue(f cli.Flag) string {
	s := dashed(f.Names()[0])
	if takesValue(f) {
		s += " " + strings.ToUpper(strings.ReplaceAll(f.Names()[0], "-", "_"))
		if d, ok := f.(cli.DocGenerationFlag); ok {
			if i := strings.IndexByte(d.GetUsage(), '`'); i >= 0 {
				if j := strings.IndexByte(d.GetUsage()[i+1:], '`'); j >= 0 {
					s = dashed(f.Names()[0]) + " " + d.GetUsage()[i+1:i+1+j]
				}
			}
		}
	}
	return s
}

func unknownFlag(path string, cmd *cli.Command, given string) error {
	name, _, _ := strings.Cut(strings.TrimLeft(given, "-"), "=")
	msg := fmt.Sprintf("unknown flag %s", escapeLine(given))
	if s := cli.SuggestFlag(cmd.Flags, name, false); s != "" && similar(strings.TrimLeft(s, "-"), name) {
		msg += "; did you mean " + s + "?"
	} else if path != cmd.Name && cmd.ArgsUsage != "" { // only a command that takes arguments
		msg += "; a path that begins with - goes after --, as in: " + path + " -- " + escapeLine(given)
	}
	return &usage{msg, path}
}

func unknownCommand(path string, cmd *cli.Command, given string) error {
	msg := fmt.Sprintf("unknown command %q", given)
	var names []string
	for _, c := range cmd.Subcommands {
		names = append(names, c.Names()...)
	}
	if best := nearest(names, given); similar(best, given) {
		msg += "; did you mean " + best + "?"
	}
	return &usage{msg, path}
}

// similar reports whether a suggestion is close enough to what was typed to be worth offering:
// urfave/cli suggests its nearest name however far it is, which offers --store for --x.
func similar(a, b string) bool { return similarity(a, b) >= 0.85 }

func similarity(a, b string) float64 { return smetrics.JaroWinkler(a, b, 0.7, 4) }

// nearest is the one of names most like given (case aside), "" when there are none.
func nearest(names []string, given string) string {
	best, score := "", 0.0
	for _, n := range names {
		if s := similarity(strings.ToLower(n), strings.ToLower(given)); s > score {
			best, score = n, s
		}
	}
	return best
}

// checkChoice refuses a value outside the fixed set of a flag that has one (flagChoices), each
// item of a list flag (listFlags) on its own: `--caps images` would otherwise be read as no
// capability at all, or fail only once the work has begun. The nearest value is offered.
func checkChoice(path string, cmd *cli.Command, f cli.Flag, value string) error {
	name := f.Names()[0]
	choices := choicesOf(cmd, name)
	if choices == nil {
		return nil
	}
	items := []string{value}
	if listFlags[name] {
		items = strings.Split(value, ",")
	}
	for _, item := range items {
		item = strings.TrimSpace(item)
		if slices.Contains(choices, item) || item == "" && listFlags[name] {
			continue
		}
		msg := fmt.Sprintf("%s %s: %q is not one of %s", dashed(name), escapeLine(value), item, strings.Join(choices, ", "))
		if listFlags[name] {
			msg = fmt.Sprintf("%s %s: %q is not one of %s (a comma-separated list)", dashed(name), escapeLine(value), item, strings.Join(choices, ", "))
		}
		if best := nearest(choices, item); similarity(strings.ToLower(best), strings.ToLower(item)) >= 0.8 {
			msg += "; did you mean " + best + "?"
		}
		return &usage{msg, path}
	}
	return nil
}

// onlyWith refuses a flag of names given without the flag with, which it needs to do anything
// (`prepare --workdir DIR` without --resolve would copy nothing, and say nothing of it).
func onlyWith(c *cli.Context, with string, names ...string) error {
	if c.Bool(with) {
		return nil
	}
	for _, n := range names {
		if c.IsSet(n) {
			return usageError("%s applies only with %s: add %s, or leave %s out", dashed(n), dashed(with), dashed(with), dashed(n))
		}
	}
	return nil
}

// flagNames is the first name of each flag.
func flagNames(flags []cli.Flag) []string {
	names := make([]string, len(flags))
	for i, f := range flags {
		names[i] = f.Names()[0]
	}
	return names
}

// noZeroLimit refuses a limit flag given as 0: unset, each of these means no limit, and a
// limit of 0 that also meant none would hide a typo or a variable left empty.
func noZeroLimit(c *cli.Context, names ...string) error {
	for _, n := range names {
		if c.IsSet(n) && c.Int64(n) == 0 {
			return usageError("%s 0: give no flag for no limit (a limit is at least 1)", dashed(n))
		}
	}
	return nil
}
