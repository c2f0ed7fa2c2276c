//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/attachctl/attachctl/ops/store/local"
)

// TestSweepSignal: SIGINT (and SIGTERM) stop a sweep of stale uploads mid-way. The sweep exits
// 130 (143), the store's locks are free, every upload it reported is gone and every other is
// intact. No sleep orders anything: the sweep pauses itself once it has reported its first
// removal (the hook of testhook.go), and the signal is sent when that line arrives, so a fast
// sweep cannot finish first and a few hundred uploads are enough.
func TestSweepSignal(t *testing.T) {
	bin := buildAttachctl(t)
	for _, tc := range []struct {
		sig syscall.Signal
		n   int
	}{{syscall.SIGINT, 400}, {syscall.SIGTERM, 100}} {
		sig, n := tc.sig, tc.n
		t.Run(sig.String(), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			b, err := local.New(dir)
			if err != nil {
				t.Fatal(err)
			}
			old := time.Now().Add(-48 * time.Hour)
			names := map[string]string{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for w := 0; w < 8; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < n; i += 8 {
						m, err := local.MakeFinished(b, fmt.Sprintf("f%05d.txt", i), []byte{byte(i)}, old, time.Time{})
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						names[m.ID] = m.Name
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			cmd := exec.Command(bin, "sweep", "--store", dir, "--older-than", "24h")
			cmd.Env = append(os.Environ(), pauseAfterEnv+"=1")
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(out)
			reported := map[string]bool{}
			for sc.Scan() {
				var r struct{ ID string }
				if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
					t.Fatalf("line %q: %v", sc.Text(), err)
				}
				if len(reported) == 0 {
					cmd.Process.Signal(sig)
				}
				reported[r.ID] = true
			}
			err = cmd.Wait()
			want := 128 + int(sig)
			if code := cmd.ProcessState.ExitCode(); code != want {
				t.Fatalf("exit %d (%v), want %d", code, err, want)
			}
			if len(reported) == 0 || len(reported) == n {
				t.Fatalf("reported %d removals of %d: not stopped mid-way", len(reported), n)
			}
			l, err := b.List(context.Background())
			if err != nil || len(l.Skipped) != 0 {
				t.Fatalf("list after: %v, skipped %v", err, l.Skipped)
			}
			left := map[string]bool{}
			for _, e := range l.Entries {
				if !e.Finished || names[e.ID] != e.Name || reported[e.ID] {
					t.Fatalf("left after the sweep: %+v (reported removed: %v)", e, reported[e.ID])
				}
				left[e.ID] = true
			}
			for id := range names {
				if !reported[id] && !left[id] {
					t.Fatalf("upload %s was not reported removed and is gone", id)
				}
			}
			if len(left)+len(reported) != n {
				t.Fatalf("%d left + %d reported != %d made", len(left), len(reported), n)
			}
			if ents, _ := os.ReadDir(filepath.Join(dir, local.InternalDir, "trash")); len(ents) != 0 {
				t.Fatalf("%d entries left in the trash", len(ents))
			}
			// The locks are free: a sweep gets its lock at once, and a use the marker lock (a
			// held one is store.locked once the use has waited for it).
			sw, err := b.Sweep(context.Background(), 0, false)
			if err != nil {
				t.Fatalf("the sweep lock is held after the interrupted sweep: %v", err)
			}
			sw.Close()
			for id := range left {
				if err := b.MarkUsed(context.Background(), []string{id}, time.Now()); err != nil {
					t.Fatalf("the marker lock is held after the interrupted sweep: %v", err)
				}
				break
			}
			t.Logf("%v: stopped after %d of %d removals", sig, len(reported), n)
		})
	}
}
