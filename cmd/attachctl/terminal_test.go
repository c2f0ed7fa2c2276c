package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

func init() {
	// tmuxrun CMD STEP...: runs the shell command CMD in a tmux pane (a terminal, 160x40, in
	// the current folder) on a tmux server of its own, then does each STEP in turn: wait=TEXT
	// waits (at most 30 s) until the pane shows TEXT, type=TEXT types TEXT, key=KEY presses KEY
	// (tmux's names: Enter, C-d). After CMD the pane shows "[exit N]". It prints the pane at the
	// end, and fails when a wait does not see its text.
	testCommands["tmuxrun"] = func() int {
		if len(os.Args) < 2 {
			fmt.Fprintln(os.Stderr, "usage: tmuxrun CMD STEP...")
			return 2
		}
		tmux := newTmux("run")
		defer tmux.run("kill-server")
		wd, _ := os.Getwd()
		// The pane stays after the command ends (sleep), so that what it printed can be read.
		script := os.Args[1] + `; echo "[exit $?]"; exec sleep 600`
		if out, err := tmux.run("new-session", "-d", "-x", "160", "-y", "40", "-c", wd, "--", "sh", "-c", script); err != nil {
			fmt.Fprintf(os.Stderr, "tmux: %v: %s\n", err, out)
			return 1
		}
		var pane string
		for _, step := range os.Args[2:] {
			kind, arg, _ := strings.Cut(step, "=")
			switch kind {
			case "wait":
				var ok bool
				if pane, ok = tmux.waitFor(arg, time.Now().Add(30*time.Second)); !ok {
					fmt.Print(pane)
					fmt.Fprintf(os.Stderr, "tmuxrun: the pane never showed %q\n", arg)
					return 1
				}
			case "type":
				tmux.run("send-keys", "-l", arg)
			case "key":
				tmux.run("send-keys", arg)
			default:
				fmt.Fprintf(os.Stderr, "tmuxrun: unknown step %q\n", step)
				return 2
			}
		}
		out, _ := tmux.run("capture-pane", "-p", "-J")
		fmt.Print(string(out))
		return 0
	}
}

// tmuxServer is a tmux server of a test command's own (its socket name), so that tests never
// meet each other's panes or the user's.
type tmuxServer string

func newTmux(tag string) tmuxServer {
	return tmuxServer(fmt.Sprintf("attachctl-test-%s-%d", tag, os.Getpid()))
}

func (s tmuxServer) run(args ...string) ([]byte, error) {
	return exec.Command("tmux", append([]string{"-L", string(s), "-f", "/dev/null"}, args...)...).CombinedOutput()
}

// waitFor waits until the pane shows text, or deadline; it returns the pane as last seen.
func (s tmuxServer) waitFor(text string, deadline time.Time) (string, bool) {
	for {
		out, _ := s.run("capture-pane", "-p", "-J")
		if pane := string(out); strings.Contains(pane, text) || time.Now().After(deadline) {
			return pane, strings.Contains(pane, text)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
