package stage_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/stage"
	"github.com/attachctl/attachctl/sniff"
)

// records yields a record per path, then ends (or ends with err after them).
func records(err error, paths ...string) stage.Next {
	i := 0
	return func() (*manifest.Record, bool, error) {
		if i == len(paths) {
			return nil, false, err
		}
		i++
		return &manifest.Record{Path: paths[i-1]}, true, nil
	}
}

func TestLoop(t *testing.T) {
	failWork := func(rec *manifest.Record) error {
		if strings.HasPrefix(rec.Path, "bad") {
			return fault.Errorf(fault.UploadUnreadable, "%s: cannot", rec.Path)
		}
		rec.Name = "done-" + rec.Path
		return nil
	}
	errStop := errors.New("stop")
	for _, tc := range []struct {
		name       string
		loop       stage.Loop
		cancel     bool // ctx done before the run
		wantPaths  []string
		wantNames  []string // Name of each record handed on
		wantFailed []string // the codes Failed was told of, in order
		wantRes    stage.Result
		wantErr    error
	}{
		{
			name:      "order kept with several jobs",
			loop:      stage.Loop{Stage: "t", Next: records(nil, "a", "b", "c", "d", "e", "f"), Work: failWork, Jobs: 4},
			wantPaths: []string{"a", "b", "c", "d", "e", "f"},
			wantNames: []string{"done-a", "done-b", "done-c", "done-d", "done-e", "done-f"},
		},
		{
			name:       "a failure is set, told and counted, the rest go on",
			loop:       stage.Loop{Stage: "t", Next: records(nil, "a", "bad1", "c"), Work: failWork, Jobs: 2},
			wantPaths:  []string{"a", "bad1", "c"},
			wantNames:  []string{"done-a", "", "done-c"},
			wantFailed: []string{"upload.unreadable"},
			wantRes:    stage.Result{Failed: 1},
		},
		{
			name:      "an input error after records ends the run, the records before handed on",
			loop:      stage.Loop{Stage: "t", Next: records(errStop, "a", "b"), Work: failWork, Jobs: 2},
			wantPaths: []string{"a", "b"},
			wantNames: []string{"done-a", "done-b"},
			wantErr:   errStop,
		},
		{
			name:    "First's error ends the run before any work",
			loop:    stage.Loop{Stage: "t", Next: records(nil, "a", "b"), Work: failWork, First: func() error { return errStop }},
			wantErr: errStop,
		},
		{
			name: "Settle may fail a record; it is told and counted",
			loop: stage.Loop{Stage: "t", Next: records(nil, "a", "b"), Work: failWork, Settle: func(rec *manifest.Record) {
				if rec.Path == "b" {
					rec.Fail("t", fault.Errorf(fault.StoreFull, "full"), "")
				}
			}},
			wantPaths:  []string{"a", "b"},
			wantNames:  []string{"done-a", "done-b"},
			wantFailed: []string{"store.full"},
			wantRes:    stage.Result{Failed: 1},
		},
		{
			name:      "interrupted: every record handed on failed, none worked",
			loop:      stage.Loop{Stage: "t", Next: records(nil, "a", "b", "c"), Work: failWork},
			cancel:    true,
			wantPaths: []string{"a", "b", "c"},
			wantNames: []string{"", "", ""},
			wantRes:   stage.Result{Failed: 3, NotReached: 3, Interrupted: true},
		},
		{
			name:      "interrupted with the rest unreadable: one record stands for it",
			loop:      stage.Loop{Stage: "t", Next: records(errStop, "a"), Work: failWork},
			cancel:    true,
			wantPaths: []string{"a", "-"},
			wantNames: []string{"", "-"},
			wantRes:   stage.Result{Failed: 2, NotReached: 2, RestUnread: true, Interrupted: true},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				cancel()
			}
			var got []*manifest.Record
			var told []string
			var mu sync.Mutex
			l := tc.loop
			l.Emit = func(rec *manifest.Record) error { got = append(got, rec); return nil }
			l.Failed = func(e *fault.Error) { mu.Lock(); told = append(told, string(e.Code)); mu.Unlock() }
			handed := 0
			l.Handed = func(*manifest.Record) { handed++ }
			res, err := l.Run(ctx)
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if res != tc.wantRes {
				t.Errorf("result %+v, want %+v", res, tc.wantRes)
			}
			var paths, names []string
			for _, r := range got {
				paths, names = append(paths, r.Path), append(names, r.Name)
				if tc.cancel && (!r.Failed() || r.Error.Code != fault.UploadInterrupted || r.Error.Stage != "t") {
					t.Errorf("%s handed on as %+v, want upload.interrupted of stage t", r.Path, r.Error)
				}
			}
			if !slices.Equal(paths, tc.wantPaths) || !slices.Equal(names, tc.wantNames) {
				t.Errorf("handed on %q named %q, want %q named %q", paths, names, tc.wantPaths, tc.wantNames)
			}
			if !slices.Equal(told, tc.wantFailed) {
				t.Errorf("Failed told %q, want %q", told, tc.wantFailed)
			}
			if handed != len(got) {
				t.Errorf("Handed told of %d records, %d handed on", handed, len(got))
			}
		})
	}
}

// A loop with Settle has a worker more than Jobs, and never more than Jobs in Work at once.
func TestLoopSettleKeepsJobs(t *testing.T) {
	var paths []string
	for i := range 40 {
		paths = append(paths, fmt.Sprint(i))
	}
	var mu sync.Mutex
	in, most := 0, 0
	l := stage.Loop{Stage: "t", Next: records(nil, paths...), Jobs: 2, Window: 8,
		Work: func(*manifest.Record) error {
			mu.Lock()
			in++
			most = max(most, in)
			mu.Unlock()
			time.Sleep(time.Millisecond)
			mu.Lock()
			in--
			mu.Unlock()
			return nil
		},
		Settle: func(*manifest.Record) { time.Sleep(time.Millisecond) },
		Emit:   func(*manifest.Record) error { return nil }}
	fl := &stage.Flight{}
	l.Flight = fl
	if _, err := l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if most > 2 {
		t.Errorf("%d records in Work at once, want at most Jobs (2)", most)
	}
	if fl.More(8) {
		t.Errorf("More after the input ended and every record was handed on")
	}
}

// Sniff fills each record before Work, from the file's bytes.
func TestLoopSniffs(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "note.txt")
	if err := os.WriteFile(p, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var mime string
	l := stage.Loop{Stage: "t", Next: records(nil, p, filepath.Join(dir, "gone")), Sniff: &sniff.Options{},
		Work: func(rec *manifest.Record) error { mime = rec.Mime; return nil },
		Emit: func(*manifest.Record) error { return nil }}
	var told []string
	l.Failed = func(e *fault.Error) { told = append(told, e.Stage+" "+string(e.Code)) }
	res, err := l.Run(context.Background())
	if err != nil || res.Failed != 1 {
		t.Fatalf("result %+v, %v: want the missing file failed", res, err)
	}
	if !strings.HasPrefix(mime, "text/plain") {
		t.Errorf("Work saw MIME %q, want text/plain", mime)
	}
	if len(told) != 1 || !strings.HasPrefix(told[0], "sniff ") {
		t.Errorf("told %q, want one failure of stage sniff", told)
	}
}

func TestManifestRecords(t *testing.T) {
	for _, tc := range []struct {
		name      string
		in        string
		stdin     bool
		wantPaths []string
		wantErr   error
		wantEmpty bool
	}{
		{name: "records", in: `{"path":"a"}` + "\n" + `{"path":"b"}` + "\n", stdin: true, wantPaths: []string{"a", "b"}},
		{name: "plain paths on standard input", in: "a.png\nb.png\n", stdin: true, wantErr: stage.ErrPlainPaths},
		{name: "empty standard input is told", in: "", stdin: true, wantEmpty: true},
		{name: "empty file is not", in: "", stdin: false},
		{name: "a JSON array is named by the reader, not taken for paths", in: `[{"path":"a"}]`, stdin: true, wantErr: fault.ManifestInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			empty := false
			next := stage.ManifestRecords(context.Background(), stage.ManifestInput{R: strings.NewReader(tc.in), Stdin: tc.stdin, Empty: func() { empty = true }})
			var paths []string
			var err error
			for {
				rec, ok, e := next()
				if e != nil {
					err = e
					break
				}
				if !ok {
					break
				}
				paths = append(paths, rec.Path)
			}
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if !slices.Equal(paths, tc.wantPaths) || empty != tc.wantEmpty {
				t.Errorf("paths %q empty %v, want %q %v", paths, empty, tc.wantPaths, tc.wantEmpty)
			}
		})
	}
}

// A read of a pipe that never ends returns ErrInterrupted once the context is done, and an end
// of input is kept: a terminal's one Ctrl-D ends the input for good.
func TestInterruptible(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	defer r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	in := stage.Interruptible(ctx, r)
	if stage.InputFile(in) != r {
		t.Fatal("InputFile does not name the pipe")
	}
	done := make(chan error, 1)
	go func() {
		_, err := in.Read(make([]byte, 8))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, stage.ErrInterrupted) {
			t.Fatalf("read ended with %v, want ErrInterrupted", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("read did not end when the context was done")
	}

	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	in2 := stage.Interruptible(context.Background(), r2)
	w2.Write([]byte("x"))
	w2.Close()
	b, err := io.ReadAll(in2)
	if string(b) != "x" || err != nil {
		t.Fatalf("read %q, %v", b, err)
	}
	if n, err := in2.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("a read after the end gave %d, %v; want the end again", n, err)
	}
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if stage.Interruptible(ctx, f) != io.Reader(f) {
		t.Error("a regular file is wrapped; it never blocks")
	}
}

// TestPathRecords: a walk of more files than one batch yields each in walk order, as sniff.Walk
// does, then the files of the list after it.
func TestPathRecords(t *testing.T) {
	d := t.TempDir()
	var want []string
	for i := range 300 {
		p := filepath.Join(d, "w", fmt.Sprintf("d%d", i/40), fmt.Sprintf("f%03d.txt", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	err := sniff.Walk([]string{filepath.Join(d, "w")}, sniff.WalkOptions{}, func(p string, err error) error {
		want = append(want, p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	listed := filepath.Join(d, "w", "d0", "f000.txt")
	want = append(want, listed)
	next, stop := stage.PathRecords(stage.PathInput{Paths: []string{filepath.Join(d, "w")},
		List: strings.NewReader(listed + "\n"), Walk: sniff.WalkOptions{Each: true}})
	defer stop()
	var got []string
	for {
		rec, ok, err := next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if _, listed := rec.Sniffed.(sniff.Listed); !listed && len(got) < 300 {
			t.Errorf("%s: not marked as listed by the walk", rec.Path)
		}
		got = append(got, rec.Path)
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %d records, want %d in walk order:\n%q\n%q", len(got), len(want), got, want)
	}
}

// TestPathRecordsPipedList: a path given on a list that is a pipe is yielded as soon as its line
// has come, while the writer has not closed the pipe: a pipeline that lists paths slowly (a
// watcher) must not wait for more to fill a batch.
func TestPathRecordsPipedList(t *testing.T) {
	d := t.TempDir()
	var files []string
	for i := range 3 {
		p := filepath.Join(d, fmt.Sprintf("f%d", i))
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	r, w := io.Pipe()
	next, stop := stage.PathRecords(stage.PathInput{List: r})
	defer stop()
	for _, p := range files {
		go w.Write([]byte(p + "\n"))
		got := make(chan string, 1)
		go func() {
			rec, ok, err := next()
			if !ok || err != nil {
				got <- fmt.Sprintf("ended (%v)", err)
				return
			}
			got <- rec.Path
		}()
		select {
		case g := <-got:
			if g != p {
				t.Fatalf("got %s, want %s", g, p)
			}
		case <-time.After(time.Minute): // not a timing: the record never comes while the pipe is open
			t.Fatalf("%s was written to the list and is not yielded while the list stays open", p)
		}
	}
	w.Close()
	if rec, ok, err := next(); ok || err != nil {
		t.Fatalf("after the list ended: %v, %v, %v", rec, ok, err)
	}
}

// TestPathRecordsStop: stop ends the walk that runs ahead of the records taken, so that its
// goroutine does not outlive the stage.
func TestPathRecordsStop(t *testing.T) {
	d := t.TempDir()
	for i := range 2000 {
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%04d", i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	before := runtime.NumGoroutine()
	next, stop := stage.PathRecords(stage.PathInput{Paths: []string{d}, Walk: sniff.WalkOptions{Each: true}})
	if _, ok, err := next(); !ok || err != nil {
		t.Fatal("no first record:", err)
	}
	stop()
	stop() // twice is harmless
	for deadline := time.Now().Add(time.Minute); runtime.NumGoroutine() > before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the walk still runs after stop: %d goroutines, %d before", runtime.NumGoroutine(), before)
		}
	}
}
