package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The kill tests' hook, never set in use: with ATTACHCTL_TEST_PAUSE_AT=BYTES and
// ATTACHCTL_TEST_ANNOUNCE_FD=N in the environment, the upload stage, once BYTES of an upload have
// reached write(2) (so that a SIGKILL cannot lose them), writes "paused OFFSET\n" on file
// descriptor N and waits there until the run is interrupted. A test then kills or signals it at
// a known point, instead of watching a file's size move while the upload runs on.
//
// The same for sweep: with ATTACHCTL_TEST_PAUSE_AFTER=N, once N removals are reported on standard
// output (the announcement), it waits there until the run is interrupted.
const (
	pauseAtEnv    = "ATTACHCTL_TEST_PAUSE_AT"
	announceFDEnv = "ATTACHCTL_TEST_ANNOUNCE_FD"
	pauseAfterEnv = "ATTACHCTL_TEST_PAUSE_AFTER"
)

// testPauseAfter is sweep's hook: called with the number of removals reported so far.
func testPauseAfter(ctx context.Context, reported int) {
	if n, err := strconv.Atoi(os.Getenv(pauseAfterEnv)); err == nil && reported == n {
		<-ctx.Done()
	}
}

// withTestPause returns progress, wrapped by the hook when its environment is set.
func withTestPause(ctx context.Context, progress func(int64)) func(int64) {
	at, err := strconv.ParseInt(os.Getenv(pauseAtEnv), 10, 64)
	fd, ferr := strconv.Atoi(os.Getenv(announceFDEnv))
	if err != nil || ferr != nil {
		return progress
	}
	announce := os.NewFile(uintptr(fd), "announce")
	var done atomic.Int64
	var once sync.Once
	return func(n int64) {
		progress(n)
		if pos := done.Add(n); pos >= at {
			once.Do(func() {
				fmt.Fprintf(announce, "paused %d\n", pos)
				<-ctx.Done()
			})
		}
	}
}

// resolve's hook: with ATTACHCTL_TEST_PAUSE_RESOLVE=1, ATTACHCTL_TEST_ANNOUNCE_FD=N and
// ATTACHCTL_TEST_RESUME_FD=M, resolve writes "paused\n" on N once its inline files are checked,
// just before the work folder is checked again, and waits for one byte on M: a test changes the work
// folder at that moment, then lets it go on.
const (
	pauseResolveEnv = "ATTACHCTL_TEST_PAUSE_RESOLVE"
	resumeFDEnv     = "ATTACHCTL_TEST_RESUME_FD"
)

// testResolvePause is resolve's hook (acp.Options.BeforeRecheck), nil unless its environment is set.
func testResolvePause() func() {
	fd, ferr := strconv.Atoi(os.Getenv(announceFDEnv))
	resume, rerr := strconv.Atoi(os.Getenv(resumeFDEnv))
	if os.Getenv(pauseResolveEnv) != "1" || ferr != nil || rerr != nil {
		return nil
	}
	return func() {
		fmt.Fprintf(os.NewFile(uintptr(fd), "announce"), "paused\n")
		os.NewFile(uintptr(resume), "resume").Read(make([]byte, 1))
	}
}

// resolve's documents' hook: with ATTACHCTL_TEST_DOC_TIMEOUT=DURATION (time.ParseDuration), a
// document's reading has that time in place of the 20 seconds. The limit is wall-clock time, and
// a script run under -race on a busy machine took longer than 20 seconds to render an ordinary
// scan's two pages: a script about what is rendered and cached, not about the limit, sets one
// that no loaded machine reaches.
const docTimeoutEnv = "ATTACHCTL_TEST_DOC_TIMEOUT"

// testDocTimeout is the documents' time limit: d, unless the hook's environment is set.
func testDocTimeout(d time.Duration) time.Duration {
	if t, err := time.ParseDuration(os.Getenv(docTimeoutEnv)); err == nil && t > 0 {
		return t
	}
	return d
}
