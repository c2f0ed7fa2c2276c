package main

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// urfave/cli computes a flag's names anew on every Names call, through a regexp (it strips what a
// v1-style "name, alias" Name would add), and a run calls Names thousands of times: every lookup
// of a flag by name (IsSet, the value getters, the flag actions, our own findFlag) walks the names
// of every flag of the command and of its parents. Under the race detector that is most of what a
// short command costs, and the tests run hundreds of them as processes. A flag's names never
// change once the app is made, so every flag of the app is wrapped in one that keeps them,
// computed once as Names computes them (namesOf). The wrappers embed the flag, so every other method and
// optional interface (VisibleFlag, DocGenerationFlag, RequiredFlag, ...) is the flag's own; code
// that asks for a flag's concrete type goes through unwrapFlag.

type keptBool struct {
	*cli.BoolFlag
	names []string
}

func (f *keptBool) Names() []string { return f.names }

type keptString struct {
	*cli.StringFlag
	names []string
}

func (f *keptString) Names() []string { return f.names }

type keptStringSlice struct {
	*cli.StringSliceFlag
	names []string
}

func (f *keptStringSlice) Names() []string { return f.names }

type keptInt struct {
	*cli.IntFlag
	names []string
}

func (f *keptInt) Names() []string { return f.names }

type keptInt64 struct {
	*cli.Int64Flag
	names []string
}

func (f *keptInt64) Names() []string { return f.names }

type keptUint64 struct {
	*cli.Uint64Flag
	names []string
}

func (f *keptUint64) Names() []string { return f.names }

type keptBytesCount struct {
	*bytesCountFlag
	names []string
}

func (f *keptBytesCount) Names() []string { return f.names }

// namesOf is what the flag's own Names gives for Name and Aliases, without its regexp when no
// name has a comma or a space (the regexp strips from the first of them to the end of the line:
// nothing, then); a name that has one gets the flag's own Names. Clipped, so that a caller's
// append (urfave/cli's suggestions append the help flag's names) never writes into the kept slice.
func namesOf(f cli.Flag, name string, aliases []string) []string {
	names := append([]string{name}, aliases...)
	for _, n := range names {
		if strings.ContainsAny(n, ", ") {
			return slices.Clip(f.Names())
		}
	}
	return slices.Clip(names)
}

// keepNames wraps f in a flag that keeps its names; a flag of a type not listed is returned as it
// is (correct, only slower: TestFlagsKeepTheirNames fails on it).
func keepNames(f cli.Flag) cli.Flag {
	switch f := f.(type) {
	case *cli.BoolFlag:
		return &keptBool{f, namesOf(f, f.Name, f.Aliases)}
	case *cli.StringFlag:
		return &keptString{f, namesOf(f, f.Name, f.Aliases)}
	case *cli.StringSliceFlag:
		return &keptStringSlice{f, namesOf(f, f.Name, f.Aliases)}
	case *cli.IntFlag:
		return &keptInt{f, namesOf(f, f.Name, f.Aliases)}
	case *cli.Int64Flag:
		return &keptInt64{f, namesOf(f, f.Name, f.Aliases)}
	case *cli.Uint64Flag:
		return &keptUint64{f, namesOf(f, f.Name, f.Aliases)}
	case *bytesCountFlag:
		return &keptBytesCount{f, namesOf(f, f.Name, f.Aliases)}
	}
	return f
}

// unwrapFlag is the flag keepNames wrapped, or f itself.
func unwrapFlag(f cli.Flag) cli.Flag {
	switch f := f.(type) {
	case *keptBool:
		return f.BoolFlag
	case *keptString:
		return f.StringFlag
	case *keptStringSlice:
		return f.StringSliceFlag
	case *keptInt:
		return f.IntFlag
	case *keptInt64:
		return f.Int64Flag
	case *keptUint64:
		return f.Uint64Flag
	case *keptBytesCount:
		return f.bytesCountFlag
	}
	return f
}

// keepFlagNames wraps every flag of the app, of its commands and of their subcommands.
func keepFlagNames(app *cli.App) {
	keepAll(app.Flags)
	var cmds func([]*cli.Command)
	cmds = func(cs []*cli.Command) {
		for _, c := range cs {
			keepAll(c.Flags)
			cmds(c.Subcommands)
		}
	}
	cmds(app.Commands)
}

func keepAll(flags []cli.Flag) {
	for i, f := range flags {
		flags[i] = keepNames(f)
	}
}

// urfave/cli's own help and version flags are added to every app and command when it runs, and
// looked up by name on every run.
func init() {
	cli.HelpFlag = keepNames(cli.HelpFlag)
	cli.VersionFlag = keepNames(cli.VersionFlag)
}
