package main

import (
	"slices"
	"testing"

	"github.com/urfave/cli/v2"
)

// Every flag of the app (and urfave/cli's help and version flags) keeps its names, and the kept
// names are exactly what the flag's own Names gives: the wrapping changes no name, and no flag
// type is left to compute its names on every call.
func TestFlagsKeepTheirNames(t *testing.T) {
	app := newApp(nil, nil, nil)
	n := 0
	check := func(where string, f cli.Flag) {
		t.Helper()
		n++
		inner := unwrapFlag(f)
		if inner == f {
			t.Errorf("%s: flag %v (%T) does not keep its names: add its type to keepNames", where, f.Names(), f)
			return
		}
		kept, own := f.Names(), inner.Names()
		if !slices.Equal(kept, own) {
			t.Errorf("%s: kept names %q, the flag's own %q", where, kept, own)
		}
		if cap(kept) != len(kept) {
			t.Errorf("%s: kept names %q have room to append into", where, kept)
		}
	}
	check("cli.HelpFlag", cli.HelpFlag)
	check("cli.VersionFlag", cli.VersionFlag)
	for _, f := range app.Flags {
		check("attachctl", f)
	}
	var cmds func(path string, cs []*cli.Command)
	cmds = func(path string, cs []*cli.Command) {
		for _, c := range cs {
			for _, f := range c.Flags {
				check(path+" "+c.Name, f)
			}
			cmds(path+" "+c.Name, c.Subcommands)
		}
	}
	cmds("attachctl", app.Commands)
	if n < 100 {
		t.Errorf("checked %d flags; expected every flag of every command", n)
	}
}

// A v1-style Name ("name, alias"), which urfave/cli's regexp cuts, keeps what Names gives.
func TestKeptNamesOfAV1Name(t *testing.T) {
	for _, f := range []cli.Flag{
		&cli.StringFlag{Name: "store, s", Aliases: []string{"t"}},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q, x"}},
		&cli.IntFlag{Name: "jobs j"},
	} {
		if kept, own := keepNames(f).Names(), f.Names(); !slices.Equal(kept, own) {
			t.Errorf("%T %q: kept names %q, the flag's own %q", f, own, kept, own)
		}
	}
}
