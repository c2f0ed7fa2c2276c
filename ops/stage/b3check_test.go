package stage_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops"
	"github.com/attachctl/attachctl/ops/stage"
)

// TestCheckB3sum: each line of a b3sum listing is answered as b3sum --check answers it, in the
// listing's order whatever the jobs, through the Open it is given (the guarded open, in the
// command), with the bytes it hashes counted.
func TestCheckB3sum(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"a.txt": "alpha\n", "b.txt": "bravo\n", `back\slash.txt`: "odd\n"}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := func(name string) string { return filepath.Join(dir, name) }
	line := func(data, path string) string { return ops.B3sumLine(hexOf([]byte(data)), path) }
	refused := errors.New("refused by the guarded open")
	open := func(path string) (io.ReadCloser, error) {
		if strings.HasSuffix(path, "guarded.txt") {
			return nil, refused
		}
		return os.Open(path)
	}
	for _, tc := range []struct {
		name    string
		listing string
		out     []string // Output of each line, in order
		bad     []int    // lines that are not b3sum lines
		failed  int
		hashed  int64
	}{
		{"all intact", line("alpha\n", p("a.txt")) + line("bravo\n", p("b.txt")),
			[]string{p("a.txt") + ": OK", p("b.txt") + ": OK"}, nil, 0, 12},
		{"the last line without its newline", strings.TrimSuffix(line("alpha\n", p("a.txt")), "\n"),
			[]string{p("a.txt") + ": OK"}, nil, 0, 6},
		{"a changed file", line("alpha\n", p("a.txt")) + line("not bravo\n", p("b.txt")),
			[]string{p("a.txt") + ": OK", p("b.txt") + ": FAILED"}, nil, 1, 12},
		{"a missing file", line("gone\n", p("gone.txt")) + line("alpha\n", p("a.txt")),
			[]string{p("gone.txt") + ": FAILED (open " + p("gone.txt") + ": no such file or directory)", p("a.txt") + ": OK"}, nil, 1, 6},
		{"a path the open refuses", line("alpha\n", p("guarded.txt")),
			[]string{p("guarded.txt") + ": FAILED (" + refused.Error() + ")"}, nil, 1, 0},
		{"a backslash in the name", line("odd\n", p(`back\slash.txt`)),
			[]string{`\` + ops.B3sumEscape(p(`back\slash.txt`)) + ": OK"}, nil, 0, 4},
		{"lines that are not b3sum lines", "nonsense\n" + line("alpha\n", p("a.txt")) + "\n",
			[]string{"", p("a.txt") + ": OK", ""}, []int{1, 3}, 2, 6},
		{"empty", "", nil, nil, 0, 0},
	} {
		for _, jobs := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/jobs=%d", tc.name, jobs), func(t *testing.T) {
				var hashed atomic.Int64
				var out []string
				var bad []int
				sum, err := stage.CheckB3sum(bg, strings.NewReader(tc.listing),
					stage.CheckOptions{Jobs: jobs, Open: open, Progress: func(n int64) { hashed.Add(n) }},
					func(c stage.CheckedLine) error {
						if c.Line != len(out)+1 {
							t.Errorf("line %d handed on as the %d. answer", c.Line, len(out)+1)
						}
						out = append(out, c.Output())
						if c.Name == "" {
							if c.Err == nil || c.OK {
								t.Errorf("line %d is not a b3sum line, yet %+v", c.Line, c)
							}
							bad = append(bad, c.Line)
						}
						return nil
					})
				if err != nil {
					t.Fatal(err)
				}
				if strings.Join(out, "|") != strings.Join(tc.out, "|") {
					t.Errorf("answers\n%q\nwant\n%q", out, tc.out)
				}
				if fmt.Sprint(bad) != fmt.Sprint(tc.bad) {
					t.Errorf("bad lines %v, want %v", bad, tc.bad)
				}
				if sum.Lines != len(tc.out) || sum.Failed != tc.failed {
					t.Errorf("summary %+v, want %d lines, %d failed", sum, len(tc.out), tc.failed)
				}
				if hashed.Load() != tc.hashed {
					t.Errorf("progress counted %d bytes, want %d", hashed.Load(), tc.hashed)
				}
			})
		}
	}
}

// TestCheckB3sumOrder: with several jobs, answers come in the listing's order even when later
// files are hashed first, and the files are hashed at once, not one after another.
func TestCheckB3sumOrder(t *testing.T) {
	dir := t.TempDir()
	var listing strings.Builder
	const n = 12
	for i := range n {
		path := filepath.Join(dir, fmt.Sprintf("f%02d", i))
		data := strings.Repeat("x", i)
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		listing.WriteString(ops.B3sumLine(hexOf([]byte(data)), path))
	}
	var open, most atomic.Int32
	slow := func(path string) (io.ReadCloser, error) {
		k := open.Add(1)
		defer open.Add(-1)
		for m := most.Load(); k > m && !most.CompareAndSwap(m, k); m = most.Load() {
		}
		// The earlier a line, the longer its open takes: in order only by waiting for it.
		i := strings.TrimPrefix(filepath.Base(path), "f")
		var idx int
		fmt.Sscan(i, &idx)
		time.Sleep(time.Duration(n-idx) * 2 * time.Millisecond)
		return os.Open(path)
	}
	var got []string
	sum, err := stage.CheckB3sum(bg, strings.NewReader(listing.String()), stage.CheckOptions{Jobs: 4, Open: slow},
		func(c stage.CheckedLine) error {
			got = append(got, filepath.Base(c.Name)+" "+fmt.Sprint(c.OK))
			return nil
		})
	if err != nil || sum.Failed != 0 || sum.Lines != n {
		t.Fatalf("summary %+v, %v", sum, err)
	}
	for i, g := range got {
		if want := fmt.Sprintf("f%02d true", i); g != want {
			t.Fatalf("answers %v: the %d. is not %q", got, i+1, want)
		}
	}
	if most.Load() < 2 {
		t.Errorf("at most %d files opened at once with 4 jobs", most.Load())
	}
}

// TestCheckB3sumStops: an error from emit stops the check and is returned, as one reading the
// listing is.
func TestCheckB3sumStops(t *testing.T) {
	full := errors.New("standard output is full")
	listing := strings.Repeat(ops.B3sumLine(hexOf(nil), "/dev/null"), 100)
	emitted := 0
	_, err := stage.CheckB3sum(bg, strings.NewReader(listing), stage.CheckOptions{Jobs: 2, Open: func(string) (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader("")), nil
	}}, func(stage.CheckedLine) error { emitted++; return full })
	if !errors.Is(err, full) || emitted != 1 {
		t.Errorf("error %v after %d answers, want %v after the first", err, emitted, full)
	}
	broken := errors.New("the listing's disk failed")
	_, err = stage.CheckB3sum(bg, io.MultiReader(strings.NewReader(listing[:76]), &failingReader{err: broken}),
		stage.CheckOptions{Open: func(string) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("")), nil }},
		func(stage.CheckedLine) error { return nil })
	if !errors.Is(err, broken) {
		t.Errorf("error %v, want %v", err, broken)
	}
}

// TestCheckB3sumInterrupted: once the context is done, no further file is opened (the one being
// hashed is finished); every line not reached is still answered, FAILED with upload.interrupted,
// and the summary counts them and says the check was interrupted. A listing that cannot be read
// after the interruption (standard input a signal cut short) ends the check without an error.
func TestCheckB3sumInterrupted(t *testing.T) {
	dir := t.TempDir()
	const n = 6
	var listing strings.Builder
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("f%d.txt", i))
		if err := os.WriteFile(p, []byte(p), 0o600); err != nil {
			t.Fatal(err)
		}
		listing.WriteString(ops.B3sumLine(hexOf([]byte(p)), p))
		if i == 3 {
			listing.WriteString("not a b3sum line\n")
		}
	}
	for _, tc := range []struct {
		name       string
		cancelAt   int  // the open of this file (from 1) cancels the context; 0: cancelled before
		cut        bool // the listing fails to read once the context is done
		opened, ok int
		notReached int
		restUnread bool
	}{
		{name: "cancelled before it starts", cancelAt: 0, opened: 0, ok: 0, notReached: n},
		{name: "cancelled while the second file is read", cancelAt: 2, opened: 2, ok: 2, notReached: n - 2},
		{name: "the listing cut short after the signal", cancelAt: 2, cut: true, opened: 2, ok: 2, notReached: 0, restUnread: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(bg)
			defer cancel()
			if tc.cancelAt == 0 {
				cancel()
			}
			var in io.Reader = strings.NewReader(listing.String())
			if tc.cut {
				in = &cutReader{ctx: ctx, r: in}
			}
			opened := 0
			open := func(path string) (io.ReadCloser, error) {
				if opened++; opened == tc.cancelAt {
					cancel()
				}
				return os.Open(path)
			}
			var got []stage.CheckedLine
			sum, err := stage.CheckB3sum(ctx, in, stage.CheckOptions{Jobs: 1, Open: open},
				func(c stage.CheckedLine) error { got = append(got, c); return nil })
			if err != nil {
				t.Fatalf("error %v: an interrupted check is not an error", err)
			}
			ok, interrupted, bad := 0, 0, 0
			for _, c := range got {
				switch {
				case c.OK:
					ok++
				case c.NotReached:
					interrupted++
					if !errors.Is(c.Err, fault.UploadInterrupted) || !strings.HasSuffix(c.Output(), "(upload.interrupted))") {
						t.Errorf("line %d: %q, want FAILED with upload.interrupted", c.Line, c.Output())
					}
				case c.Name == "":
					bad++
				default:
					t.Errorf("line %d: %q, want OK, interrupted or not a b3sum line", c.Line, c.Output())
				}
			}
			if opened != tc.opened || ok != tc.ok || interrupted != tc.notReached || sum.NotReached != tc.notReached ||
				!sum.Interrupted || sum.RestUnread != tc.restUnread {
				t.Errorf("%d files opened, %d OK, %d answered interrupted, summary %+v; want %d opened, %d OK, %d interrupted, rest unread %v",
					opened, ok, interrupted, sum, tc.opened, tc.ok, tc.notReached, tc.restUnread)
			}
			if !tc.cut && (len(got) != n+1 || bad != 1 || sum.Failed != tc.notReached+1) {
				t.Errorf("%d lines answered (%d bad), %d failed; want every line answered, the bad one too", len(got), bad, sum.Failed)
			}
			if e := sum.NotReachedFailure(); e == nil || e.Code != fault.UploadInterrupted {
				t.Errorf("NotReachedFailure() = %v, want upload.interrupted", e)
			}
		})
	}
	sum, _ := stage.CheckB3sum(bg, strings.NewReader(listing.String()), stage.CheckOptions{Open: func(p string) (io.ReadCloser, error) { return os.Open(p) }},
		func(stage.CheckedLine) error { return nil })
	if sum.Interrupted || sum.NotReached != 0 || sum.NotReachedFailure() != nil {
		t.Errorf("a check that ran to its end says it was interrupted: %+v", sum)
	}
}

// cutReader reads r until ctx is done, then fails as standard input does once a signal came
// (stage.Interruptible).
type cutReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *cutReader) Read(p []byte) (int, error) {
	if c.ctx.Err() != nil {
		return 0, stage.ErrInterrupted
	}
	return c.r.Read(p[:min(len(p), 40)])
}
