package stage_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/stage"
	"github.com/attachctl/attachctl/sniff"
)

func TestInputRecords(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.txt", "b.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	manifestLine := `{"path":"m.txt"}` + "\n"
	for _, tc := range []struct {
		name        string
		in          stage.Input
		manifest    string
		stdin       bool
		wantSniffed bool
		wantPaths   []string
		wantErr     error
	}{
		{name: "arguments, manifest unread", in: stage.Input{Paths: []string{a}}, manifest: manifestLine, wantSniffed: true, wantPaths: []string{a}},
		{name: "arguments then the list", in: stage.Input{Paths: []string{a}, List: strings.NewReader(b + "\n")}, wantSniffed: true, wantPaths: []string{a, b}},
		{name: "a NUL-terminated list alone", in: stage.Input{List: strings.NewReader(b + "\x00"), Null: true}, wantSniffed: true, wantPaths: []string{b}},
		{name: "a folder argument is walked", in: stage.Input{Paths: []string{dir}, Walk: sniff.WalkOptions{Each: true}}, wantSniffed: true, wantPaths: []string{a, b}},
		{name: "no paths: the manifest", manifest: manifestLine, wantPaths: []string{"m.txt"}},
		{name: "plain paths on standard input", manifest: a + "\n", stdin: true, wantErr: stage.ErrPlainPaths},
		{name: "plain paths in a manifest file", manifest: a + "\n", wantErr: errManifest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.in.FromPaths(); got != tc.wantSniffed {
				t.Errorf("FromPaths() = %v, want %v", got, tc.wantSniffed)
			}
			next, sniffed, stop := tc.in.Records(context.Background(), stage.ManifestInput{R: strings.NewReader(tc.manifest), Stdin: tc.stdin})
			defer stop()
			if sniffed != tc.wantSniffed {
				t.Errorf("sniffed = %v, want %v", sniffed, tc.wantSniffed)
			}
			var paths []string
			var err error
			for {
				rec, ok, nerr := next()
				if nerr != nil || !ok {
					err = nerr
					break
				}
				paths = append(paths, rec.Path)
			}
			switch {
			case tc.wantErr == errManifest:
				if fault.CodeOf(err) != fault.ManifestInvalid {
					t.Errorf("err = %v, want a manifest.invalid", err)
				}
			case !errors.Is(err, tc.wantErr):
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
			if strings.Join(paths, "|") != strings.Join(tc.wantPaths, "|") {
				t.Errorf("paths = %q, want %q", paths, tc.wantPaths)
			}
		})
	}
}

// errManifest stands for any manifest.invalid error in TestInputRecords.
var errManifest = errors.New("any manifest.invalid")

func TestNotReachedFailure(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  stage.Result
		want string // "" for no failure
	}{
		{name: "all reached", res: stage.Result{Failed: 3, Interrupted: true}},
		{name: "some not reached", res: stage.Result{NotReached: 2, Interrupted: true},
			want: "interrupted: 2 records not reached, each passed on failed; run the same command again (upload.interrupted)"},
		{name: "the rest of the input unread", res: stage.Result{NotReached: 1, RestUnread: true, Interrupted: true},
			want: "interrupted: 1 records (the last one, path -, for the input not read) not reached, each passed on failed; run the same command again (upload.interrupted)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.res.NotReachedFailure("shrink")
			if tc.want == "" {
				if e != nil {
					t.Fatalf("NotReachedFailure = %v, want nil", e)
				}
				return
			}
			if e == nil || e.Error() != tc.want || e.Stage != "shrink" || e.Code != fault.UploadInterrupted {
				t.Fatalf("NotReachedFailure = %#v, want %q of stage shrink", e, tc.want)
			}
		})
	}
}

func TestTakesOf(t *testing.T) {
	for usage, want := range map[string]stage.Takes{
		"[PATH...]": stage.TakesPaths,
		"PATH...":   stage.TakesPaths,
		"[ID...]":   stage.TakesIDs,
		"[FILE]":    stage.TakesFile,
		"[FILE|-]":  stage.TakesFile,
		"":          stage.TakesFile,
	} {
		if got := stage.TakesOf(usage); got != want {
			t.Errorf("TakesOf(%q) = %v, want %v", usage, got, want)
		}
	}
}

func TestTerminalHint(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	// Input that is no terminal (a pipe, a file, a reader) gets no hint: a pipeline's standard
	// error stays quiet.
	for _, in := range []io.Reader{r, strings.NewReader("x")} {
		if got := stage.TerminalHint(in, "verify", "a manifest", stage.TakesIDs); got != "" {
			t.Errorf("TerminalHint(%T) = %q, want none", in, got)
		}
	}
	for _, tc := range []struct {
		goos  string
		takes stage.Takes
		want  string
	}{
		{"linux", stage.TakesPaths, "attachctl: upload: reading the file from the terminal, end it with Ctrl-D; or give paths as arguments, or pipe a manifest in"},
		{"darwin", stage.TakesIDs, "attachctl: upload: reading the file from the terminal, end it with Ctrl-D; or give upload ids or --all, or pipe a manifest in"},
		{"windows", stage.TakesFile, "attachctl: upload: reading the file from the terminal, end it with Ctrl-Z and Enter; or give a FILE, or pipe it in"},
	} {
		if got := stage.HintLine("upload", "the file", tc.takes, tc.goos); got != tc.want {
			t.Errorf("HintLine(%s, %v) = %q, want %q", tc.goos, tc.takes, got, tc.want)
		}
	}
}
