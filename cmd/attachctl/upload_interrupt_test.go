//go:build unix

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
)

// TestUploadInterruptedPassesTheRestOn: SIGINT halfway through `upload --each DIR`, and through
// an upload reading its manifest from a pipe. Exit 130; every record the run did not reach is
// passed on with upload.interrupted and named on standard error (from a pipe, the part it could
// not read is one record with path "-"), so that `prompt` given the output fails and writes
// nothing instead of a prompt that silently lacks files; the same command run again finishes
// every file.
func TestUploadInterruptedPassesTheRestOn(t *testing.T) {
	bin := buildAttachctl(t)
	work := t.TempDir()
	src := filepath.Join(work, "logs")
	const n = 1500 // more than the stage's window: some records are not yet read at the signal
	contents, total := eachTree(t, src, n, 41)
	sniffed, err := exec.Command(bin, "sniff", "--each", src).Output()
	if err != nil {
		t.Fatalf("sniff: %v", err)
	}

	// interrupt runs the upload until it pauses halfway, sends SIGINT and checks what it
	// wrote; it returns the records.
	interrupt := func(t *testing.T, stdin *os.File, args ...string) []manifest.Record {
		t.Helper()
		r := startUploadIn(t, bin, stdin, total/2, args...)
		r.waitPaused(t)
		r.cmd.Process.Signal(syscall.SIGINT)
		<-r.done
		if code := r.cmd.ProcessState.ExitCode(); code != 130 {
			t.Fatalf("exit %d, want 130\n%s", code, r.stderr.String())
		}
		var recs []manifest.Record
		mr := manifest.NewReader(bytes.NewReader(r.stdout.Bytes()))
		for {
			rec, err := mr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("the output is not a manifest: %v", err)
			}
			recs = append(recs, *rec)
		}
		finished, stopped := 0, 0
		for _, rec := range recs {
			switch {
			case rec.Error == nil && rec.Upload != nil:
				if got, err := os.ReadFile(rec.Upload.Path); err != nil || !bytes.Equal(got, contents[rec.Name]) {
					t.Fatalf("%s: upload %s is not its source (%v)", rec.Name, rec.Upload.ID, err)
				}
				finished++
			case rec.Error != nil && rec.Error.Code == fault.UploadInterrupted:
				stopped++
			default:
				t.Fatalf("record %+v: want finished or upload.interrupted", rec)
			}
		}
		if finished == 0 || stopped == 0 {
			t.Fatalf("%d finished, %d interrupted: the signal came halfway", finished, stopped)
		}
		// Those the run had begun are told one by one; those it never reached, in one line.
		notReached := 0
		for _, rec := range recs {
			if rec.Error != nil && (strings.Contains(rec.Error.Message, "not reached") || rec.Path == "-") {
				notReached++
			}
		}
		stderr := r.stderr.String()
		if notReached == 0 || !strings.Contains(stderr, fmt.Sprintf("upload: interrupted: %d records", notReached)) {
			t.Fatalf("%d records not reached; stderr does not count them in one line:\n%s", notReached, stderr)
		}
		if got := strings.Count(stderr, "(upload.interrupted)"); got != stopped-notReached+1 {
			t.Fatalf("%d upload.interrupted lines on stderr for %d records begun and %d not reached:\n%s", got, stopped-notReached, notReached, stderr)
		}
		prompt := exec.Command(bin, "prompt", "--text", "review")
		prompt.Stdin = bytes.NewReader(r.stdout.Bytes())
		out, err := prompt.Output()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || len(out) != 0 {
			t.Fatalf("prompt of the interrupted output: %v, %d bytes; want exit 1 and no prompt", err, len(out))
		}
		return recs
	}
	again := func(t *testing.T, store string) {
		t.Helper()
		recs, stderr, code := runUpload(t, bin, "--each", "--store", store, src)
		if code != 0 || len(recs) != n {
			t.Fatalf("run again: exit %d, %d records\n%s", code, len(recs), stderr)
		}
		if got := finishedUploads(t, store, contents); got != n {
			t.Fatalf("%d finished uploads, want %d", got, n)
		}
	}

	t.Run("walk", func(t *testing.T) {
		store := filepath.Join(work, "walk")
		recs := interrupt(t, nil, "--each", "--store", store, src)
		if len(recs) != n {
			t.Fatalf("%d records for %d files: each file gets one", len(recs), n)
		}
		again(t, store)
	})

	t.Run("pipe", func(t *testing.T) {
		store := filepath.Join(work, "pipe")
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		// The whole manifest is written, and the pipe stays open until the run has ended:
		// what it has not read by the signal stays unread.
		go pw.Write(sniffed)
		defer pw.Close()
		recs := interrupt(t, pr, "--store", store)
		pr.Close()
		last := recs[len(recs)-1]
		if last.Path != "-" || last.Error == nil || !strings.Contains(last.Error.Message, "the rest of the input") {
			t.Fatalf("last record %+v: want the unread rest of standard input as path -", last)
		}
		if len(recs) >= n+1 {
			t.Fatalf("%d records: the whole manifest was read before the signal", len(recs))
		}
		again(t, store)
	})
}
