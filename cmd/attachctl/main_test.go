package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/attachctl/attachctl/ops/store/storetest"
	"github.com/rogpeppe/go-internal/testscript"
)

// testCommands are the programs testscript scripts can run: attachctl itself and test helpers
// that other _test.go files add in their init.
var testCommands = map[string]func() int{
	"attachctl": func() int { return run(os.Args) },
}

// helperCmds are the scripts' helper commands that run inside the test process (testscript's
// Params.Cmds), added by other _test.go files in their init: the test binary is built with -race
// when the tests are, and every process of it pays the race runtime's start and every package's
// init before it does anything, several times what most helpers do. A helper that a shell must
// find (sh -c, tmux), that runs in the background or that is signalled stays in testCommands.
var helperCmds = map[string]func(h helper, args []string) error{}

// helper is what an in-process helper command has of its script: the script's folder (its cd)
// and environment, and its standard output and error, which the script's stdout and stderr
// commands match as they match a process's.
type helper struct {
	ts             *testscript.TestScript
	stdout, stderr io.Writer
}

// abs is path, relative to the script's current folder as a process's would be.
func (h helper) abs(path string) string { return h.ts.MkAbs(path) }

func (h helper) getenv(key string) string { return h.ts.Getenv(key) }

// scriptCmds turns helperCmds into testscript commands that behave as the processes did: an
// error is the command's failure (its message on stderr, prefixed by the command's name), which
// fails the script unless the line is negated with !, and a negated line fails when the command
// succeeds. Every call replaces the script's stdout and stderr, as a process's run does.
func scriptCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	cmds := map[string]func(ts *testscript.TestScript, neg bool, args []string){}
	for name, f := range helperCmds {
		if testCommands[name] != nil {
			panic("script command " + name + " is both a process and an in-process command")
		}
		cmds[name] = func(ts *testscript.TestScript, neg bool, args []string) {
			h := helper{ts: ts, stdout: ts.Stdout(), stderr: ts.Stderr()}
			err := f(h, args)
			if err != nil {
				fmt.Fprintf(h.stderr, "%s: %v\n", name, err)
			}
			switch {
			case err != nil && !neg:
				ts.Fatalf("unexpected command failure")
			case err == nil && neg:
				ts.Fatalf("unexpected command success")
			}
		}
	}
	return cmds
}

// afterTests are run when the tests have ended (not in the scripts' runs of attachctl).
var afterTests = []func(){builtValidator.Remove, builtAttachctl.Remove}

func TestMain(m *testing.M) {
	code := testscript.RunMain(m, testCommands)
	for _, f := range afterTests {
		f()
	}
	os.Exit(code)
}

// TestScript runs every script in testdata/script: the CLI as a user runs it.
func TestScript(t *testing.T) {
	// Parallel with the other script test: each waits for its last, longest scripts, and side by
	// side one's scripts fill the cores that the other's tail leaves idle.
	t.Parallel()
	validator := acpValidator(t)
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: false,
		Cmds:                scriptCmds(),
		Setup: func(env *testscript.Env) error {
			// Samples from the repository, reachable as $SAMPLES.
			wd, err := os.Getwd()
			if err != nil {
				return err
			}
			env.Setenv("SAMPLES", wd+"/../../testdata/samples")
			env.Setenv("REPO", filepath.Dir(filepath.Dir(wd)))
			// For scripts that run the go command (release.sh): the caches of this machine.
			for k, v := range goEnv() {
				env.Setenv(k, v)
			}
			env.Setenv("XDG_STATE_HOME", env.WorkDir+"/state")
			env.Setenv("GORACE", childGORACE())
			env.Setenv("XDG_CACHE_HOME", env.WorkDir+"/cache")
			if err := shareCompiledCode(env, env.WorkDir+"/cache"); err != nil {
				return err
			}
			env.Setenv("ACPVALIDATE", validator)
			return nil
		},
		// [ci]: running under CI=true, where a tool a script needs must be installed: scripts
		// write `[!exec:TOOL] [ci] stop` so that a missing tool fails there instead of skipping.
		Condition: func(cond string) (bool, error) {
			if cond == "ci" {
				return os.Getenv("CI") == "true", nil
			}
			if cond == "race" { // built with -race: a script too slow under it skips (.ci/run runs it without)
				return raceBuild, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}

// testCodeCache is the machine code wazero compiled from pdfium and libheif in the scripts of
// earlier runs (and in .ci/run's run without the race detector), kept between runs like the
// package tests of sniff and shrink/doc keep theirs.
var testCodeCache = filepath.Join(os.TempDir(), "attachctl-test-wasm", "scripts")

// shareCompiledCode gives a script's cache folder (its XDG_CACHE_HOME) the compiled code of
// testCodeCache, by hard links, and gives back what the script compiled when it ends: each
// script has a cache of its own, and without this every script that sniffs a PDF compiled
// pdfium again, a minute or more under -race. wazero replaces a cache file by renaming a new one
// over it, so a script never changes a shared file.
func shareCompiledCode(env *testscript.Env, cache string) error {
	mine := filepath.Join(cache, "attachctl", "wasm")
	env.Defer(func() { linkTree(mine, testCodeCache) })
	return linkTree(testCodeCache, mine)
}

// linkTree hard-links every whole file of the folder src (a missing one is empty) into dst,
// keeping what dst has.
func linkTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if path == src && os.IsNotExist(err) {
				return nil
			}
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		case d.Type().IsRegular() && !strings.HasSuffix(d.Name(), ".tmp"):
			if err := os.Link(path, filepath.Join(dst, rel)); err != nil && !os.IsExist(err) {
				return err
			}
		}
		return nil
	})
}

// childGORACE is GORACE for the attachctl processes the scripts run, which are this test binary:
// built with -race, each would sleep a second on exit (the race detector's atexit_sleep_ms,
// there for goroutines still running to report), and the scripts run hundreds of them one
// after another. A race found while a process runs is still reported and still fails it
// (exit 66). The caller's GORACE options are kept; one that sets atexit_sleep_ms wins.
func childGORACE() string {
	g := os.Getenv("GORACE")
	if strings.Contains(g, "atexit_sleep_ms") {
		return g
	}
	return strings.TrimSpace(g + " atexit_sleep_ms=0")
}

// acpValidator builds scripts/acpvalidate, what the scripts' acpvalidate runs.
func acpValidator(t *testing.T) string {
	return builtValidator.Get(t, "../../scripts/acpvalidate", "acpvalidate")
}

var builtValidator storetest.Built

// builtAttachctl is attachctl built as released, for the tests that run it as a process of its
// own and signal it.
var builtAttachctl storetest.Built

// goEnv is where the go command keeps its caches here, for the scripts that build (testscript
// gives them a HOME of their own).
var goEnv = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		return m
	}
	vals := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		if i < len(vals) && vals[i] != "" {
			m[k] = vals[i]
		}
	}
	return m
})

// eachMatch runs f on every file that the globs (relative to the script's folder) match, for the
// scripts' helper commands: an error when a glob matches nothing or f fails.
func eachMatch(h helper, globs []string, f func(path string) error) error {
	for _, g := range globs {
		paths, _ := filepath.Glob(h.abs(g))
		if len(paths) == 0 {
			return fmt.Errorf("no match: %s", g)
		}
		for _, p := range paths {
			if err := f(p); err != nil {
				return err
			}
		}
	}
	return nil
}
