package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

func init() {
	// sigreading [-s INT] CMD ARG...: runs CMD and, once it is blocked reading its standard input,
	// sends it SIGTERM (or SIGINT); it exits with CMD's status, 128+N when a signal ended it (as
	// `timeout --preserve-status` does). `timeout 1` in its place sent the signal after a second
	// whether or not CMD had got that far: a race-built attachctl on a loaded machine can take
	// longer than that to start, and a signal that comes before the command has set up its
	// handler ends it without the line the scripts check.
	testCommands["sigreading"] = func() int {
		args, sig := os.Args[1:], syscall.SIGTERM
		if len(args) > 1 && args[0] == "-s" {
			switch args[1] {
			case "INT":
				sig = syscall.SIGINT
			case "TERM":
			default:
				fmt.Fprintln(os.Stderr, "sigreading: -s takes INT or TERM")
				return 2
			}
			args = args[2:]
		}
		if len(args) == 0 {
			fmt.Fprintln(os.Stderr, "usage: sigreading [-s INT] CMD ARG...")
			return 2
		}
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "sigreading:", err)
			return 1
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		if !waitReading(cmd.Process.Pid, done) {
			cmd.Process.Kill()
			<-done
			fmt.Fprintln(os.Stderr, "sigreading: the command never read its standard input")
			return 1
		}
		cmd.Process.Signal(sig)
		<-done
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return cmd.ProcessState.ExitCode()
	}
}

// readSyscall is the number of read(2) in /proc/PID/task/TID/syscall, by architecture.
var readSyscall = map[string]string{"amd64": "0", "arm64": "63", "386": "3", "riscv64": "63"}[runtime.GOARCH]

// waitReading waits (at most a minute) until one of pid's threads is blocked in read(2) on file
// descriptor 0, as /proc shows it. Where /proc does not show it (not Linux), it waits a second,
// as the scripts did before. It returns false when the process ended or the minute passed.
func waitReading(pid int, done <-chan struct{}) bool {
	if _, err := os.Stat("/proc/self/syscall"); err != nil || readSyscall == "" {
		select {
		case <-done:
			return false
		case <-time.After(time.Second):
			return true
		}
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/syscall", pid))
		for _, t := range tasks {
			b, err := os.ReadFile(t)
			if f := strings.Fields(string(b)); err == nil && len(f) > 1 && f[0] == readSyscall && f[1] == "0x0" {
				return true
			}
		}
		select {
		case <-done:
			return false
		case <-time.After(5 * time.Millisecond): // polling /proc: there is no event to wait on
		}
	}
	return false
}
