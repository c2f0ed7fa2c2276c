//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/open"
	"github.com/zeebo/blake3"
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
			ctx := context.Background()
			b, err := open.Store(ctx, dir, open.Options{})
			if err != nil {
				t.Fatal(err)
			}
			names := map[string]string{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for w := 0; w < 8; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < n; i += 8 {
						// Uploaded as any embedder uploads; the cutoff below makes them all stale.
						data := []byte{byte(i)}
						sum := blake3.Sum256(data)
						id, err := b.Begin(ctx, fmt.Sprintf("f%05d.txt", i), int64(len(data)))
						if err == nil {
							_, err = b.Write(ctx, id, 0, bytes.NewReader(data))
						}
						var m *store.Info
						if err == nil {
							m, err = b.Finish(ctx, id, int64(len(data)), hex.EncodeToString(sum[:]))
						}
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
			// Every upload was made before this cutoff, so every one is stale.
			cmd := exec.Command(bin, "sweep", "--store", dir, "--before", time.Now().UTC().Format(time.RFC3339Nano))
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
			if ents, _ := os.ReadDir(filepath.Join(dir, storeInternalDir, "trash")); len(ents) != 0 {
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
