package stage

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops"
)

// CheckOptions tune CheckB3sum.
type CheckOptions struct {
	// Jobs is how many files are hashed at once (at least one).
	Jobs int
	// Open opens a path a line names, for hashing; it is required. The command passes
	// open.ForCheck, which opens a finished upload only through its store's guarded open and
	// never blocks on a FIFO.
	Open func(path string) (io.ReadCloser, error)
	// Progress, when set, is called with the byte count of each read of a file.
	Progress func(int64)
}

// CheckedLine is the answer to one line of a b3sum listing.
type CheckedLine struct {
	Line int // the line's number, from 1
	// Name is the path as b3sum --check prints it: with a leading backslash and escapes when it
	// holds a backslash or a newline; "" for a line that is not a b3sum line.
	Name string
	OK   bool  // the file's BLAKE3 is the line's
	Err  error // why the line is not a b3sum line (Name ""), or why its file could not be read
	// NotReached: ctx was done before its file was opened; Err is upload.interrupted.
	NotReached bool
}

// Output is the line b3sum --check prints for it: "NAME: OK", "NAME: FAILED", or "NAME: FAILED
// (why)" for a file that could not be read; "" for a line that is not a b3sum line, which b3sum
// tells of on standard error instead.
func (c CheckedLine) Output() string {
	switch {
	case c.Name == "":
		return ""
	case c.OK:
		return c.Name + ": OK"
	case c.Err != nil:
		return c.Name + ": FAILED (" + c.Err.Error() + ")"
	}
	return c.Name + ": FAILED"
}

// CheckSummary is what CheckB3sum checked.
type CheckSummary struct {
	Lines  int // lines read
	Failed int // lines that failed: a changed or unreadable file, or not a b3sum line
	// NotReached counts the lines an interruption kept from being checked, each answered
	// FAILED with upload.interrupted (counted in Failed too).
	NotReached int
	// RestUnread: the listing could not be read after the interruption (standard input that a
	// signal cut short); its lines not read are not answered.
	RestUnread bool
	// Interrupted: ctx was done before the listing ended.
	Interrupted bool
}

// NotReachedFailure is the one failure that tells of the lines an interruption kept from being
// checked, or nil when the check was not interrupted: said once at the end, as a stage's loop
// says the records it did not reach (Result.NotReachedFailure).
func (s CheckSummary) NotReachedFailure() *fault.Error {
	if !s.Interrupted || s.NotReached == 0 && !s.RestUnread {
		return nil
	}
	what := fmt.Sprintf("%d lines not checked, each answered FAILED", s.NotReached)
	if s.RestUnread {
		what += "; the rest of the listing not read"
	}
	return fault.Errorf(fault.UploadInterrupted, "interrupted: %s; run the same command again", what)
}

// CheckB3sum is b3sum --check over the listing in: each line's file is hashed, o.Jobs at once,
// and its answer handed to emit in the listing's order. A line that fails does not stop the
// check; an error reading in, or from emit, does, and is returned. Once ctx is done no further
// file is opened (one being hashed is finished): as a stage's loop does with its records, every
// line not reached is still read and answered FAILED with upload.interrupted, so that nothing
// reading the answers takes a shorter listing for a complete one, and the summary says so.
func CheckB3sum(ctx context.Context, in io.Reader, o CheckOptions, emit func(CheckedLine) error) (CheckSummary, error) {
	if o.Open == nil {
		return CheckSummary{}, errors.New("stage.CheckB3sum: no Open")
	}
	type job struct {
		line       int
		hash, path string
		err        error
	}
	br := bufio.NewReader(in)
	var sum CheckSummary
	err := Ordered(o.Jobs,
		func() (job, bool, error) {
			line, err := br.ReadString('\n')
			if err != nil && err != io.EOF && ctx.Err() != nil {
				// Interrupted: what was not read (a line cut short too) is not checked either.
				sum.RestUnread = true
				return job{}, false, nil
			}
			if line == "" && err != nil {
				if err == io.EOF {
					return job{}, false, nil
				}
				return job{}, false, err
			}
			sum.Lines++
			j := job{line: sum.Lines}
			j.hash, j.path, j.err = ops.ParseB3sumLine(strings.TrimSuffix(line, "\n"))
			return j, true, nil
		},
		func(j job) CheckedLine {
			c := CheckedLine{Line: j.line, Err: j.err}
			if j.err != nil {
				return c
			}
			c.Name = j.path
			if strings.ContainsAny(j.path, "\\\n") {
				c.Name = "\\" + ops.B3sumEscape(j.path)
			}
			if ctx.Err() != nil {
				c.Err, c.NotReached = fault.Errorf(fault.UploadInterrupted, "not checked: interrupted before it; run the same command again"), true
				return c
			}
			f, err := o.Open(j.path)
			if err != nil {
				c.Err = err
				return c
			}
			defer f.Close()
			got, _, err := ops.Hash(f, o.Progress)
			c.OK, c.Err = err == nil && got == j.hash, err
			return c
		},
		func(c CheckedLine) error {
			if !c.OK {
				sum.Failed++
			}
			if c.NotReached {
				sum.NotReached++
			}
			return emit(c)
		})
	sum.Interrupted = ctx.Err() != nil
	return sum, err
}
