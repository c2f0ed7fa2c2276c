//go:build linux

package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attachctl/attachctl/ops/store/storetest/s3test"
)

// TestResolveFolderS3Kill: kill -9 of `resolve --workdir` while it copies a folder upload from
// S3, its files fetched 16 at once: the moment is known, not polled (a proxy holds the GET of one
// file's object and says so). The tree in the work folder then holds only whole files, no temp
// file, and the killed run's temps are beside it in WORKDIR/<id>/; the next resolve removes them
// and completes the copy, every file equal to its source.
func TestResolveFolderS3Kill(t *testing.T) {
	srv := s3test.Start(t)
	proxy := srv.Proxy(t)
	bin := buildAttachctl(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "proj")
	const n = 60
	writeLogTree(t, src, n, 7, func(i int) string { return fmt.Sprintf("d%d/f%02d.log", i%4, i) })
	uri := srv.URI("kill/chat")
	run := func(env []string, args ...string) *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), env...)
		return cmd
	}
	up, err := run(srv.Env(), "upload", "--progress", "never", "--store", uri, src).Output()
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	pc := run(nil, "prompt", "--text", "look")
	pc.Stdin = strings.NewReader(string(up))
	prompt, err := pc.Output()
	if err != nil {
		t.Fatal(err)
	}
	pj := filepath.Join(dir, "p.json")
	if err := os.WriteFile(pj, prompt, 0o600); err != nil {
		t.Fatal(err)
	}

	held := make(chan struct{})
	var once sync.Once
	proxy.SetFault(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/proj/d1/f21.log") {
			return false
		}
		once.Do(func() { close(held) })
		<-r.Context().Done() // until the client is gone
		return true
	})
	work := filepath.Join(dir, "work")
	cmd := run(proxy.Env(srv), "resolve", "--store", uri, "--workdir", work, pj)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-held:
	case err := <-exited:
		t.Fatalf("the resolve ended (%v) before it asked for d1/f21.log", err)
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-exited
		t.Fatal("the resolve never asked for d1/f21.log")
	}
	cmd.Process.Kill()
	<-exited
	proxy.SetFault(nil)

	ids, err := os.ReadDir(work)
	if err != nil || len(ids) != 1 {
		t.Fatalf("work folder after the kill: %v, %v", ids, err)
	}
	top := filepath.Join(work, ids[0].Name())
	temps := func() []string {
		var ts []string
		entries, _ := os.ReadDir(top)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".attachctl-") {
				ts = append(ts, e.Name())
			}
		}
		return ts
	}
	if ts := temps(); len(ts) == 0 || !strings.HasPrefix(ts[0], fmt.Sprintf(".attachctl-%d-", cmd.Process.Pid)) {
		t.Fatalf("temps beside the tree after the kill: %v, want the killed run's (the held file's at least)", ts)
	}
	srcOf := func(p string) string {
		rel, _ := filepath.Rel(filepath.Join(top, "proj"), p)
		return filepath.Join(src, rel)
	}
	filepath.WalkDir(filepath.Join(top, "proj"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		got, _ := os.ReadFile(p)
		want, werr := os.ReadFile(srcOf(p))
		if werr != nil || string(got) != string(want) {
			t.Errorf("%s in the tree after the kill: not a whole file of the folder", p)
		}
		return nil
	})
	if _, err := os.Lstat(filepath.Join(top, "proj", "d1", "f21.log")); !os.IsNotExist(err) {
		t.Fatalf("the held file is in the tree: %v", err)
	}

	out, err := run(srv.Env(), "resolve", "--store", uri, "--workdir", work, pj).CombinedOutput()
	if err != nil {
		t.Fatalf("resolve again: %v\n%s", err, out)
	}
	if ts := temps(); len(ts) != 0 {
		t.Fatalf("temps left after the next resolve: %v", ts)
	}
	sameTree(t, src, filepath.Join(top, "proj"), n)
}
