package stage

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"sync"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/sniff"
	"golang.org/x/term"
)

// ErrPlainPaths is standard input that holds lines of plain text where a manifest was expected:
// `ls | attachctl sniff`.
var ErrPlainPaths = fault.Errorf(fault.ManifestInvalid, "standard input is not a manifest (not JSON)")

// ManifestInput is where a stage reads a manifest from.
type ManifestInput struct {
	// R is the manifest.
	R io.Reader
	// Stdin: R is standard input, where a person may pipe plain paths by mistake (ErrPlainPaths)
	// and where an empty input means a stage before this one failed (Empty).
	Stdin bool
	// Empty, when set and Stdin, is called when the input ended before its first record.
	Empty func()
}

// ManifestRecords yields the records of a manifest. A read error after ctx is done is
// ErrInterrupted: the signal cut the input short, it is not a bad manifest.
func ManifestRecords(ctx context.Context, in ManifestInput) Next {
	br := bufio.NewReader(in.R)
	r := manifest.NewReader(br)
	first, records := true, 0
	return func() (*manifest.Record, bool, error) {
		if first && in.Stdin {
			first = false
			if looksLikePaths(br) {
				return nil, false, ErrPlainPaths
			}
		}
		rec, err := r.Next()
		if err == io.EOF {
			if records == 0 && in.Stdin && in.Empty != nil {
				in.Empty()
			}
			return nil, false, nil
		}
		if err != nil && ctx.Err() != nil {
			return nil, false, ErrInterrupted
		}
		records++
		return rec, err == nil, err
	}
}

// looksLikePaths reports whether the input starts with something other than JSON: the first
// byte that is not white space is neither '{' nor '[' (a JSON array is named by the manifest
// reader). It reads nothing away from the reader.
func looksLikePaths(br *bufio.Reader) bool {
	for n := 1; n <= 4096; n *= 2 {
		b, err := br.Peek(n)
		if t := bytes.TrimLeft(b, " \t\r\n"); len(t) > 0 {
			return t[0] != '{' && t[0] != '['
		}
		if err != nil {
			return false
		}
	}
	return false
}

// PathInput is the paths a stage was given: its arguments, then (when List is set) the paths
// listed in List, one a line (NUL-terminated with Null).
type PathInput struct {
	Paths []string
	List  io.Reader
	Null  bool
	Walk  sniff.WalkOptions
	// Failed, when set, is told of an entry the walk could not read: its record is yielded
	// failed (file.unreadable) and no later stage says it again.
	Failed func(e *fault.Error)
}

// PathRecords walks the paths, then those of the list, lexical order within folders, and yields
// one path-only record per file (to be sniffed: Loop.Sniff). stop ends the walk early; it is to be
// called once the records are no longer wanted. It does not wait: a walk blocked reading the list
// (a terminal, a pipe) ends when that read returns.
//
// The walk runs ahead of the workers in a goroutine of its own and hands its records over in
// batches. Walked as a coroutine of the worker that asks for the next record, it held that worker,
// and the one waiting behind it, for every folder it read; with its own goroutine the workers only
// take records from a slice, and `sniff --no-hash` of many small files keeps every core busy.
// A batch is handed over early whenever the workers have none left, and before each read of the
// list, which may be a pipe that waits for its writer: a record is never held back waiting for
// paths that have not come.
func PathRecords(in PathInput) (next Next, stop func()) {
	batches := make(chan []*manifest.Record, walkBatches)
	quit := make(chan struct{})
	var listErr error // written by the walk before it closes batches
	go func() {
		defer close(batches)
		var batch []*manifest.Record
		// flush hands the batch over; false when stop was called.
		flush := func() bool {
			if len(batch) == 0 {
				return true
			}
			select {
			case batches <- batch:
				batch = nil
				return true
			case <-quit:
				return false
			}
		}
		each := func(e sniff.Entry) error {
			rec := &manifest.Record{Path: e.Path, Rel: e.Rel}
			if e.Err != nil {
				if e := rec.Fail("sniff", e.Err, fault.FileUnreadable); in.Failed != nil {
					in.Failed(e)
				}
			} else if e.Regular {
				rec.Sniffed = sniff.Listed{}
			}
			if batch == nil {
				batch = make([]*manifest.Record, 0, walkBatch)
			}
			batch = append(batch, rec)
			if (len(batch) == walkBatch || len(batches) == 0) && !flush() {
				return errStopWalk
			}
			return nil
		}
		if sniff.WalkEntries(in.Paths, in.Walk, each) != nil || !flush() || in.List == nil {
			return
		}
		err := sniff.ReadPaths(in.List, in.Null, func(path string) error {
			if err := sniff.WalkEntries([]string{path}, in.Walk, each); err != nil {
				return err
			}
			if !flush() { // the next path may be long in coming
				return errStopWalk
			}
			return nil
		})
		if err != errStopWalk {
			listErr = err
		}
	}()
	var cur []*manifest.Record
	var once sync.Once
	return func() (*manifest.Record, bool, error) {
			if len(cur) == 0 {
				b, ok := <-batches
				if !ok {
					return nil, false, listErr
				}
				cur = b
			}
			rec := cur[0]
			cur = cur[1:]
			return rec, true, nil
		}, func() {
			once.Do(func() { close(quit) })
		}
}

// walkBatch is how many records the walk hands over at once, and walkBatches how many batches it
// may run ahead: enough that a worker seldom waits for a folder's listing, few enough that the
// records waiting cost little memory.
const walkBatch, walkBatches = 64, 8

var errStopWalk = errors.New("walk stopped")

// Interruptible returns in, or, when in is a terminal or a pipe, in read so that a read ends with
// ErrInterrupted once ctx is done. Standard input may be a terminal or a pipe that never closes,
// and a read blocked there would keep a command from stopping on SIGINT or SIGTERM. A regular
// file never blocks, so it is read as it is.
func Interruptible(ctx context.Context, in io.Reader) io.Reader {
	f, ok := in.(*os.File)
	if !ok {
		return in
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		return in
	}
	if term.IsTerminal(int(f.Fd())) {
		backgroundReadsFail()
	}
	return &ctxReader{ctx: ctx, f: f}
}

// ctxReader reads f in a goroutine of its own for each Read, into a buffer that goroutine owns,
// so that a Read abandoned at the signal leaves nothing writing into the caller's buffer.
//
// Its end of input stays: a terminal gives one end of input per Ctrl-D, and a reader that looks
// again after the end (bufio.Reader.Peek hands the end on once, and a later Read asks again)
// would wait for a second Ctrl-D. cat ends at the first, and so does attachctl.
type ctxReader struct {
	ctx  context.Context
	f    *os.File
	buf  []byte
	dead bool // a read was abandoned; its goroutine may still hold buf
	eof  bool // f has ended
}

type readResult struct {
	n   int
	err error
}

func (r *ctxReader) Read(p []byte) (int, error) {
	if r.dead || r.ctx.Err() != nil {
		return 0, ErrInterrupted
	}
	if r.eof {
		return 0, io.EOF
	}
	if cap(r.buf) < len(p) {
		r.buf = make([]byte, len(p))
	}
	buf := r.buf[:len(p)]
	done := make(chan readResult, 1)
	go func() {
		n, err := r.f.Read(buf)
		done <- readResult{n, err}
	}()
	select {
	case res := <-done:
		r.eof = res.err == io.EOF
		return copy(p, buf[:res.n]), res.err
	case <-r.ctx.Done():
		r.dead = true
		return 0, ErrInterrupted
	}
}

// InputFile is the file under a reader Interruptible returned (or the file itself), or nil.
func InputFile(in io.Reader) *os.File {
	switch r := in.(type) {
	case *os.File:
		return r
	case *ctxReader:
		return r.f
	}
	return nil
}
