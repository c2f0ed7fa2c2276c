package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// Standard input may be a terminal or a pipe that never closes. A read blocked there would keep
// a command from stopping on SIGINT or SIGTERM, so such input is read through interruptible,
// whose reads end when the run's context does.

// interruptible returns in, or, when in is a terminal or a pipe, in read so that a read ends with
// errInterrupted once ctx is done. A regular file never blocks, so it is read as it is.
func interruptible(ctx context.Context, in io.Reader) io.Reader {
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

// errInterrupted ends a read that a signal cut short.
var errInterrupted = fmt.Errorf("interrupted")

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
		return 0, errInterrupted
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
		return 0, errInterrupted
	}
}

// inputFile is the file under standard input as the app reads it, or nil.
func inputFile(in io.Reader) *os.File {
	switch r := in.(type) {
	case *os.File:
		return r
	case *ctxReader:
		return r.f
	}
	return nil
}

// terminalInput reports whether standard input is a terminal.
func terminalInput(c *cli.Context) bool {
	f := inputFile(c.App.Reader)
	return f != nil && term.IsTerminal(int(f.Fd()))
}

// eofKey is how a person ends input typed at a terminal.
func eofKey() string {
	if runtime.GOOS == "windows" {
		return "Ctrl-Z and Enter"
	}
	return "Ctrl-D"
}

// terminalHint says, on standard error, that the command is about to read what from a terminal,
// so that `attachctl verify` typed alone does not wait without a word.
func terminalHint(c *cli.Context, what string) {
	if globalBool(c, "quiet") || !terminalInput(c) {
		return
	}
	name := strings.TrimPrefix(commandName(c), "attachctl ")
	var instead string
	switch args := c.Command.ArgsUsage; {
	case strings.Contains(args, "PATH"):
		instead = "give paths as arguments, or pipe a manifest in"
	case strings.Contains(args, "ID"):
		instead = "give upload ids or --all, or pipe a manifest in"
	default:
		instead = "give a FILE, or pipe it in"
	}
	fmt.Fprintf(c.App.ErrWriter, "attachctl: %s: reading %s from the terminal, end it with %s; or %s\n", name, what, eofKey(), instead)
}

// emptyInput says, on standard error, that standard input ended before its first record: in
// `attachctl sniff --nohash docs | attachctl shrink` the first stage failed, and each stage after
// it says that it had nothing to do.
func emptyInput(c *cli.Context) {
	if globalBool(c, "quiet") || hasFlag(c, "allow-empty") { // prompt says it itself
		return
	}
	fmt.Fprintf(c.App.ErrWriter, "attachctl: %s: the manifest on standard input is empty: no records (did a stage before this one fail?)\n",
		strings.TrimPrefix(commandName(c), "attachctl "))
}

// commandName is the command that runs, as "attachctl upload begin".
func commandName(c *cli.Context) string {
	var names []string
	for _, cc := range c.Lineage() {
		if cc.Command != nil && cc.Command.Name != "" {
			names = append([]string{cc.Command.Name}, names...)
		}
	}
	if len(names) == 0 || names[0] != "attachctl" {
		names = append([]string{"attachctl"}, names...)
	}
	return strings.Join(names, " ")
}
