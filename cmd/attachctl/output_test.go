package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// brokenStdout fails every write, as a full disk does.
type brokenStdout struct{}

func (brokenStdout) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// Every command whose standard output cannot be written says so and exits 1, not 0 (output lost
// silently) and not 2 (which says the input was wrong).
func TestOutputFailureExitsOne(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(file, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	store, cache := filepath.Join(dir, "store"), filepath.Join(dir, "cache")
	run := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := runWith(append([]string{"attachctl"}, args...), strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	manifestFile := filepath.Join(dir, "uploaded.jsonl")
	if err := os.WriteFile(manifestFile, []byte(run("upload", "--store", store, file)), 0o600); err != nil {
		t.Fatal(err)
	}
	promptFile := filepath.Join(dir, "prompt.json")
	if err := os.WriteFile(promptFile, []byte(run("prompt", "--manifest", manifestFile)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"sniff", file},
		{"upload", "--store", store, file},
		{"prompt", "--manifest", manifestFile},
		{"resolve", "--store", store, promptFile},
		{"prepare", "--store", store, "--out", cache, "--text", "x", file},
		{"prepare", "--store", store, "--out", cache, "--text", "x", "--resolve", file},
		{"verify", "--store", store, "--all"},
		{"verify", "--store", store, "--all", "--format", "b3sum"},
	} {
		var errb bytes.Buffer
		code := runWith(append([]string{"attachctl", "--quiet"}, args...), strings.NewReader(""), brokenStdout{}, &errb)
		if code != 1 || !strings.Contains(errb.String(), "attachctl: "+args[0]+": ") || !strings.Contains(errb.String(), "no space left on device") {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 naming the command and the error", args, code, errb.String())
		}
	}
}
