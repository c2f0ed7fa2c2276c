package main

import (
	"bytes"
	"os"
	"path/filepath"
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
			// Its own flags only; the global ones are behind `attachctl help global`.
			if strings.Contains(got, "\n   --s3-path-style") || strings.Contains(got, "\n   --store DIR") ||
				!strings.Contains(got, "'attachctl help global'") {
				t.Errorf("%v --help lists the global flags, or does not point to attachctl help global:\n%s", p, got)
			}
			for _, l := range strings.Split(got, "\n") {
				if strings.Count(l, "default: ") > 1 {
					t.Errorf("%v --help gives a default twice: %s", p, l)
				}
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

// docs/manual.md is `attachctl man --markdown`: the same definitions as --help and the man page.
// When a command, flag or help text changes, regenerate it:
//
//	go run ./cmd/attachctl man --markdown > docs/manual.md
func TestManualIsCurrent(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runWith([]string{"attachctl", "man", "--markdown"}, strings.NewReader(""), &out, &errb); code != 0 || errb.Len() > 0 {
		t.Fatalf("man --markdown: exit %d, stderr %q", code, errb.String())
	}
	saved, err := os.ReadFile(filepath.Join("..", "..", "docs", "manual.md"))
	if err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != string(saved) {
		g, s := strings.Split(got, "\n"), strings.Split(string(saved), "\n")
		i := 0
		for i < len(g) && i < len(s) && g[i] == s[i] {
			i++
		}
		line := func(l []string) string {
			if i < len(l) {
				return l[i]
			}
			return "(end of file)"
		}
		t.Errorf("docs/manual.md is stale: run go run ./cmd/attachctl man --markdown > docs/manual.md\n"+
			"first difference at line %d:\n  generated: %s\n  in the file: %s", i+1, line(g), line(s))
	}
	for _, want := range []string{"### attachctl upload chunk", "- `--chunk BYTES`: ", "## Global flags", "| 10 | ", "| 11 | "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("man --markdown lacks %q", want)
		}
	}
}
