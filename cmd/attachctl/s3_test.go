package main

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/attachctl/attachctl/ops/store/s3/s3test"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestScriptS3 runs the scripts of testdata/script/s3 against a real S3-compatible server
// (versitygw on a loopback port), each with a fresh store $S3STORE and the AWS variables pointing
// at the server. $S3DIR is the server's own folder; $SILENT an endpoint that accepts connections
// and never answers.
func TestScriptS3(t *testing.T) {
	validator := acpValidator(t)
	srv := s3test.Start(t)
	silent := s3test.Silent(t)
	stripping := srv.Proxy(t)
	stripping.StripConditions = true
	var n atomic.Int64
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script/s3",
		Setup: func(env *testscript.Env) error {
			env.Setenv("SAMPLES", wd+"/../../testdata/samples")
			env.Setenv("XDG_STATE_HOME", env.WorkDir+"/state")
			env.Setenv("XDG_CACHE_HOME", env.WorkDir+"/cache")
			env.Setenv("GORACE", childGORACE())
			env.Setenv("ACPVALIDATE", validator)
			for _, kv := range srv.Env() {
				k, v, _ := strings.Cut(kv, "=")
				env.Setenv(k, v)
			}
			env.Setenv("S3STORE", srv.URI(fmt.Sprintf("script%d/chat-42", n.Add(1))))
			env.Setenv("S3DIR", srv.Dir)
			env.Setenv("SILENT", silent)                // accepts connections, never answers
			env.Setenv("STRIPPING", stripping.Endpoint) // drops If-None-Match and If-Match
			return nil
		},
	})
}
