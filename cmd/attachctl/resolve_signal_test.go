//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestResolveSignal: a local resolve that SIGINT or SIGTERM reaches before it has written exits
// 130 or 143, writes nothing on standard output and marks no upload used. The signal is sent
// while resolve waits for its input (a thread of it blocked reading the pipe, /proc says), which
// then never comes: no sleep orders anything.
func TestResolveSignal(t *testing.T) {
	bin := buildAttachctl(t)
	store, prompt := storedPrompt(t, bin, t.TempDir())
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(bin, "resolve", "--store", store)
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := cmd.Process.Pid
			waitReadingPipe(t, pid) // its handler is in place before it reads
			cmd.Process.Signal(sig)
			// It stops without its input: the prompt is written only if it has not exited
			// within 20 seconds (an attachctl that ignores the signal), and then too late.
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case err = <-exited:
			case <-time.After(20 * time.Second):
				in.Write(prompt)
				in.Close()
				err = <-exited
			}
			in.Close()
			if code := cmd.ProcessState.ExitCode(); code != 128+int(sig) {
				t.Fatalf("exit %d (%v), want %d; stderr: %s", code, err, 128+int(sig), errb.String())
			}
			if out.Len() != 0 {
				t.Fatalf("wrote %d bytes on standard output: %.200s", out.Len(), out.String())
			}
			used, _ := filepath.Glob(filepath.Join(store, "*", ".used"))
			if len(used) != 0 {
				t.Fatalf("marked used: %v", used)
			}
		})
	}
}

// storedPrompt uploads one binary file into a new store under dir and returns the store and a
// prompt that names it.
func storedPrompt(t *testing.T, bin, dir string) (store string, prompt []byte) {
	t.Helper()
	store = filepath.Join(dir, "store")
	if err := os.WriteFile(filepath.Join(dir, "a.bin"), bytes.Repeat([]byte{0, 1, 2}, 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	up, err := exec.Command(bin, "upload", "--store", store, filepath.Join(dir, "a.bin")).Output()
	if err != nil {
		t.Fatal(err)
	}
	p := exec.Command(bin, "prompt", "--text", "look")
	p.Stdin = bytes.NewReader(up)
	if prompt, err = p.Output(); err != nil {
		t.Fatal(err)
	}
	return store, prompt
}

// waitReadingPipe polls until a thread of process pid waits in a pipe read, for at most 20
// seconds.
func waitReadingPipe(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/wchan", pid))
		for _, task := range tasks {
			if b, _ := os.ReadFile(task); strings.Contains(string(b), "pipe_read") || strings.Contains(string(b), "pipe_wait") {
				return
			}
		}
	}
	t.Fatalf("process %d never waited for its input", pid)
}
