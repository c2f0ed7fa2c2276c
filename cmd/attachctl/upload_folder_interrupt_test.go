//go:build unix

package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store/storetest/s3test"
)

// TestUploadFolderInterrupted: SIGINT or SIGTERM half way through a folder upload, on the local
// store and on S3, gives the folder's record upload.interrupted, as a single file's does: the
// upload was stopped and can be resumed, it is not missing.
func TestUploadFolderInterrupted(t *testing.T) {
	bin := buildAttachctl(t)
	work := t.TempDir()
	src := filepath.Join(work, "bundle")
	var total int64
	for _, f := range writeLogTree(t, src, 200, 7, func(i int) string { return fmt.Sprintf("d%d/f%03d.log", i/50, i) }) {
		total += int64(len(f.Data))
	}
	srv := s3test.Start(t)
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	for _, backend := range []string{"local", "s3"} {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			name := backend + "/" + sig.String()
			t.Run(name, func(t *testing.T) {
				st := filepath.Join(work, "store-"+strings.ReplaceAll(name, "/", "-"))
				if backend == "s3" {
					st = srv.URI("interrupt/" + strings.ReplaceAll(name, " ", "-"))
				}
				r := startUploadIn(t, bin, nil, total/2, "--store", st, src)
				r.waitPaused(t)
				r.cmd.Process.Signal(sig)
				<-r.done
				if code := r.cmd.ProcessState.ExitCode(); code != 128+int(sig) {
					t.Fatalf("exit %d, want %d\n%s", code, 128+int(sig), r.stderr.String())
				}
				rec, err := manifest.NewReader(bytes.NewReader(r.stdout.Bytes())).Next()
				if err != nil {
					t.Fatalf("the output is no record: %v\n%s", err, r.stdout.String())
				}
				if rec.Error == nil || rec.Error.Code != fault.UploadInterrupted {
					t.Fatalf("record error %+v, want upload.interrupted\n%s", rec.Error, r.stderr.String())
				}
				if !strings.Contains(r.stderr.String(), "(upload.interrupted)") {
					t.Fatalf("stderr does not name upload.interrupted:\n%s", r.stderr.String())
				}
			})
		}
	}
}
