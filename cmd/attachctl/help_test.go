package main

import (
	"bytes"
	"strings"
	"testing"
)

// Every command and subcommand has help with an example and the exit codes; `help CMD` prints
// exactly what `CMD --help` does; neither writes to standard error.
func TestEveryCommandsHelp(t *testing.T) {
	help := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := runWith(append([]string{"attachctl"}, args...), strings.NewReader(""), &out, &errb); code != 0 || errb.Len() > 0 {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errb.String())
		}
		return out.String()
	}
	n := 0
	for _, c := range commands {
		paths := [][]string{{c.Name}}
		for _, sub := range c.Subcommands {
			paths = append(paths, []string{c.Name, sub.Name})
		}
		for _, p := range paths {
			n++
			got := help(append(p, "--help")...)
			for _, want := range []string{"Example:", "EXIT CODES:", "attachctl " + strings.Join(p, " ")} {
				if !strings.Contains(got, want) {
					t.Errorf("%v --help lacks %q:\n%s", p, want, got)
				}
			}
			if strings.Contains(got, "(required) (default") || strings.Contains(got, "help, h ") {
				t.Errorf("%v --help shows a default of a required flag or a help subcommand:\n%s", p, got)
			}
			if viaHelp := help(append([]string{"help"}, p...)...); viaHelp != got {
				t.Errorf("help %v differs from %v --help:\n%s\n---\n%s", p, p, viaHelp, got)
			}
		}
	}
	root := help("--help")
	if !strings.Contains(root, "Example:") || !strings.Contains(root, "EXIT CODES:") || help("help") != root {
		t.Errorf("attachctl --help lacks an example or the exit codes, or differs from attachctl help:\n%s", root)
	}
	if n < 16 {
		t.Errorf("checked %d commands' help; expected every command and subcommand", n)
	}
}
