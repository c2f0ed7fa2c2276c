//go:build linux

package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestResolveWorkdirSwapped: the work folder swapped for a symlink (to the real folder the copies
// went into) while resolve runs is refused: upload.unreadable, exit 1, nothing on standard output
// and nothing marked used. Resolve pauses itself once its inline files are checked (the hook of
// testhook.go), the test swaps the folder, then lets it go on: no sleep orders anything.
func TestResolveWorkdirSwapped(t *testing.T) {
	bin := buildAttachctl(t)
	dir := t.TempDir()
	store, prompt := storedPrompt(t, bin, dir)
	work := filepath.Join(dir, "work")
	for _, swap := range []bool{false, true} {
		announceR, announceW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		resumeR, resumeW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "resolve", "--store", store, "--workdir", work)
		cmd.Stdin = bytes.NewReader(prompt)
		cmd.ExtraFiles = []*os.File{announceW, resumeR} // fds 3 and 4
		cmd.Env = append(os.Environ(), pauseResolveEnv+"=1", announceFDEnv+"=3", resumeFDEnv+"=4")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		announceW.Close()
		resumeR.Close()
		line, err := bufio.NewReader(announceR).ReadString('\n')
		if err != nil || line != "paused\n" {
			cmd.Wait()
			t.Fatalf("resolve never paused (%q, %v): %s", line, err, errb.String())
		}
		if swap {
			if err := os.Rename(work, work+".real"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(work+".real", work); err != nil {
				t.Fatal(err)
			}
		}
		resumeW.Write([]byte{1})
		resumeW.Close()
		err = cmd.Wait()
		announceR.Close()
		if !swap {
			if err != nil || !strings.Contains(out.String(), work) {
				t.Fatalf("untouched work folder: %v: %s", err, errb.String())
			}
			used, _ := filepath.Glob(filepath.Join(store, "*", ".used"))
			for _, u := range used {
				os.Remove(u) // the swapped run starts with nothing marked
			}
			continue
		}
		if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(errb.String(), "replaced by a symlink") || !strings.Contains(errb.String(), "upload.unreadable") {
			t.Fatalf("exit %d, stderr %s: want 1 and upload.unreadable", code, errb.String())
		}
		if out.Len() != 0 {
			t.Fatalf("wrote %d bytes on standard output: %.200s", out.Len(), out.String())
		}
		if used, _ := filepath.Glob(filepath.Join(store, "*", ".used")); len(used) != 0 {
			t.Fatalf("marked used: %v", used)
		}
	}
}
