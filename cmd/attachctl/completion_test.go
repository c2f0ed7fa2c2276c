package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
)

func init() {
	// tmuxtype SHELL SETUP LINE WANT [KEY...]: types LINE and then the KEYs (default: Tab Tab)
	// into an interactive SHELL (bash, zsh or fish) in a tmux pane after running SETUP there,
	// waits (at most 30 s) until the pane shows WANT, and prints the pane. The shell runs on a
	// tmux server of its own, which is ended after.
	testCommands["tmuxtype"] = func() int {
		if len(os.Args) < 5 {
			fmt.Fprintln(os.Stderr, "usage: tmuxtype SHELL SETUP LINE WANT [KEY...]")
			return 2
		}
		shell, setup, line, want, keys := os.Args[1], os.Args[2], os.Args[3], os.Args[4], os.Args[5:]
		if len(keys) == 0 {
			keys = []string{"Tab", "Tab"}
		}
		argv := map[string][]string{
			"bash": {"bash", "--norc", "--noprofile", "-i"},
			"zsh":  {"zsh", "-f", "-i"},
			"fish": {"fish", "--no-config", "-i"},
		}[shell]
		if argv == nil {
			fmt.Fprintln(os.Stderr, "tmuxtype: shells are bash, zsh and fish")
			return 2
		}
		tmux := newTmux("type")
		defer tmux.run("kill-server")
		if out, err := tmux.run(append([]string{"new-session", "-d", "-x", "160", "-y", "40", "--"}, argv...)...); err != nil {
			fmt.Fprintf(os.Stderr, "tmux: %v: %s\n", err, out)
			return 1
		}
		// The setup ends by printing a mark, so that the line is typed once the shell is ready.
		mark := "; echo READY-$((6*7))"
		if shell == "fish" {
			mark = "; echo READY-(math 6 '*' 7)"
		}
		tmux.run("send-keys", "-l", setup+mark)
		tmux.run("send-keys", "Enter")
		var pane string
		deadline := time.Now().Add(30 * time.Second)
		wait := func(s string) (ok bool) {
			pane, ok = tmux.waitFor(s, deadline)
			return ok
		}
		if !wait("READY-42") {
			fmt.Fprintf(os.Stderr, "tmuxtype: the shell never got ready:\n%s\n", pane)
			return 1
		}
		tmux.run("send-keys", "-l", line)
		for _, k := range keys {
			tmux.run("send-keys", k)
		}
		ok := wait(want)
		fmt.Print(pane)
		if !ok {
			fmt.Fprintf(os.Stderr, "tmuxtype: the pane never showed %q\n", want)
			return 1
		}
		return 0
	}
}

// Every fixed set of values completion offers is one the flag's help names.
func TestFlagChoicesInHelp(t *testing.T) {
	app := newApp(nil, nil, nil)
	for key, choices := range flagChoices {
		cmdName, flagName, ok := strings.Cut(key, " ")
		if !ok {
			cmdName, flagName = "", key
		}
		found := 0
		for _, c := range app.Commands {
			if cmdName != "" && c.Name != cmdName {
				continue
			}
			f := findFlag(c.Flags, flagName)
			if f == nil {
				continue
			}
			found++
			usage := f.(cli.DocGenerationFlag).GetUsage()
			for _, v := range choices {
				if !strings.Contains(usage, v) {
					t.Errorf("%s --%s: completion offers %q, which its help (%q) does not name", c.Name, flagName, v, usage)
				}
			}
		}
		if found == 0 {
			t.Errorf("flagChoices[%q]: no command has that flag", key)
		}
	}
}

func TestCompletions(t *testing.T) {
	app := newApp(nil, nil, nil)
	for _, tc := range []struct {
		line string // the words typed; the last is the one completed
		want []string
	}{
		{"up", []string{"upload"}},
		{"help up", []string{"upload"}},
		{"help upload f", []string{"finish"}},
		{"completion ", []string{"bash", "zsh", "fish"}},
		{"completion zsh ", nil},
		{"upload notes.txt -- ", []string{":files"}},
		{"upload notes.txt -- --", []string{":files"}},
		{"upload b", []string{"begin", ":files"}},
		{"upload notes.txt b", []string{":files"}},
		{"upload --store ", []string{":files"}},
		{"upload --store=", nil},
		{"--progress ", []string{"auto", "always", "never"}},
		{"sweep --progress a", []string{"auto", "always"}},
		{"sweep --progress = a", []string{"auto", "always"}},
		{"sweep --progress =", []string{"=auto", "=always", "=never"}},
		{"ls --progress=n", []string{"--progress=never"}},
		{"verify --format ", []string{"manifest", "text", "b3sum", "combined"}},
		{"ls --format ", []string{"manifest", "text"}},
		{"resolve --caps image,", []string{"image,audio", "image,embeddedContext"}},
		{"prepare --caps a", []string{"audio"}},
		{"sweep --older", []string{"--older-than"}},
		{"sweep x", nil},
		{"--vers", []string{"--version"}},
		{"verify --all --store S --for", []string{"--format"}},
	} {
		words := strings.Split(tc.line, " ")
		var got []string
		for _, c := range completions(app, words[:len(words)-1], words[len(words)-1]) {
			w, _, _ := strings.Cut(c, "\t")
			got = append(got, w)
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("completing %q: %q, want %q", tc.line, got, tc.want)
		}
	}
}
