package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/attachctl/attachctl/ops/store/storetest/s3test"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestScriptS3 runs the scripts of testdata/script/s3 against a real S3-compatible server
// (versitygw on a loopback port), each with a fresh store $S3STORE and the AWS variables pointing
// at the server. $S3STOREDIR is the folder where the server keeps that store's objects (and only
// that store's: the scripts run in parallel against one server, and a glob over the server's
// whole folder finds the other scripts' objects); $SILENT an endpoint that accepts connections
// and never answers.
func TestScriptS3(t *testing.T) {
	// Parallel with the other script test: each waits for its last, longest scripts, and side by
	// side one's scripts fill the cores that the other's tail leaves idle.
	t.Parallel()
	validator := acpValidator(t)
	srv := s3test.Start(t)
	neighbourStore(t, srv.Dir)
	silent := s3test.Silent(t)
	stripping := srv.Proxy(t)
	stripping.StripConditions = true
	var n atomic.Int64
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:  "testdata/script/s3",
		Cmds: scriptCmds(),
		Setup: func(env *testscript.Env) error {
			env.Setenv("SAMPLES", wd+"/../../testdata/samples")
			env.Setenv("XDG_STATE_HOME", env.WorkDir+"/state")
			env.Setenv("XDG_CACHE_HOME", env.WorkDir+"/cache")
			if err := shareCompiledCode(env, env.WorkDir+"/cache"); err != nil {
				return err
			}
			env.Setenv("GORACE", childGORACE())
			env.Setenv("ACPVALIDATE", validator)
			for _, kv := range srv.Env() {
				k, v, _ := strings.Cut(kv, "=")
				env.Setenv(k, v)
			}
			prefix := fmt.Sprintf("script%d/chat-42", n.Add(1))
			env.Setenv("S3STORE", srv.URI(prefix))
			env.Setenv("S3STOREDIR", filepath.Join(srv.Dir, srv.Bucket, prefix))
			env.Setenv("SILENT", silent)                // accepts connections, never answers
			env.Setenv("STRIPPING", stripping.Endpoint) // drops If-None-Match and If-Match
			return nil
		},
	})
}

// neighbourStore puts, where the server keeps its objects, a store that no script is given
// (script0: the scripts' stores are script1 up), holding objects under the names the scripts
// use, and checks when every script has ended that none of them was changed or removed. A
// script that reaches past its own store (a glob over every script's store finds a neighbour's
// b.txt as soon as that one exists, which depends on how the parallel scripts interleave) then
// fails every run, not now and then.
func neighbourStore(t *testing.T, dir string) {
	t.Helper()
	root := filepath.Join(dir, "attachctl", "script0", "chat-42")
	id := "01900000-0000-7000-8000-0000000000d0"
	files := map[string]string{}
	for _, name := range []string{id + "/a.txt", id + "/b.txt", id + "/d/b.txt", id + "/proj/b/main.go",
		".attachctl/store", "sub/x.txt"} {
		files[filepath.Join(root, name)] = "neighbour " + name + "\n"
	}
	for path, body := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { // after every script (the scripts are parallel subtests)
		for path, body := range files {
			if got, err := os.ReadFile(path); err != nil || string(got) != body {
				t.Errorf("a script reached into another store: %s: %q, %v (want it untouched)", path, got, err)
			}
		}
	})
}
