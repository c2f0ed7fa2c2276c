package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops/store"
)

// Progress, as restic shows it: while a stage runs, one bar on standard error that redraws itself;
// at the end the bar is erased and one summary line stays (what was done, how many bytes, how
// long). Any other line (an error, "resuming at") is written on a line of its own: the bar is
// erased first and drawn again under it at its next step.
//
// In a pipeline every stage shares one terminal. A stage whose standard output is a pipe leaves
// the bar to the stage it feeds (--progress auto): only the last stage draws a bar, and each
// stage's summary line stays, one line per stage. --progress always draws a bar in any case.

// bar is a stage's progress bar and summary on standard error, or nothing. Its methods are safe on
// a nil bar, and from several goroutines.
type bar struct {
	ctx    context.Context // done: the run was interrupted
	w      io.Writer
	pb     *progressbar.ProgressBar // nil when another stage draws the bar
	mu     sync.Mutex               // orders drawing and other lines
	desc   string
	unit   string // "files" or "bytes"
	start  time.Time
	bytes  atomic.Int64
	files  atomic.Int64
	failed atomic.Int64
}

// shown is the bar this process draws, so that a line for a person can be put above it.
var shown atomic.Pointer[bar]

// newBar makes a bar of total units (-1: unknown), shown when --progress is always, or auto and
// standard error is a terminal, and never with --quiet. unit is "files" or "bytes".
func (g globals) newBar(total int64, desc, unit string) *bar {
	if !g.forPerson() {
		return nil
	}
	b := &bar{ctx: g.ctx, w: rawStderr(g.stderr), desc: desc, unit: unit, start: time.Now()}
	if g.progress == "auto" && toPipe(g.stdout) {
		return b // the stage after this one draws the bar
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(b.w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionThrottle(100 * time.Millisecond),
		progressbar.OptionShowCount(),
		progressbar.OptionClearOnFinish(),
		// No goroutine of its own that redraws the spinner of a bar of unknown length: it reads
		// the bar's state unlocked (a data race), and could draw after the summary. The spinner
		// moves when the work does.
		progressbar.OptionSetSpinnerChangeInterval(0),
	}
	if unit == "bytes" {
		opts = append(opts, progressbar.OptionShowBytes(true))
	} else {
		opts = append(opts, progressbar.OptionSetItsString(unit))
	}
	b.pb = progressbar.NewOptions64(total, opts...)
	shown.Store(b)
	return b
}

// toPipe reports whether w is a pipe.
func toPipe(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeNamedPipe != 0
}

// Add counts n units done (bytes for a bar in bytes).
func (b *bar) Add(n int64) {
	if b == nil {
		return
	}
	if b.unit == "bytes" {
		b.bytes.Add(n)
	}
	if b.pb != nil {
		b.mu.Lock()
		b.pb.Add64(n)
		b.mu.Unlock()
	}
}

// AddTotal grows the bar's total, for bars whose size is learnt as records arrive.
func (b *bar) AddTotal(n int64) {
	if b != nil && b.pb != nil {
		b.mu.Lock()
		b.pb.ChangeMax64(b.pb.GetMax64() + n)
		b.mu.Unlock()
	}
}

// Record counts one record handed on, for the summary; a bar in files moves by one.
func (b *bar) Record(rec *manifest.Record) {
	if b == nil {
		return
	}
	b.files.Add(1)
	if rec.Failed() {
		b.failed.Add(1)
	} else if b.unit != "bytes" {
		b.bytes.Add(rec.Size)
	}
	if b.unit != "bytes" && b.pb != nil {
		b.mu.Lock()
		b.pb.Add64(1)
		b.mu.Unlock()
	}
}

// Finish erases the bar and writes the summary line, which stays: "attachctl: upload: 3 files,
// 12 MB in 1.2s", with how many failed, or that the run was interrupted. verify writes its own
// last line ("N ok, M failed").
func (b *bar) Finish() {
	if b == nil {
		return
	}
	if b.pb != nil {
		b.mu.Lock()
		// Finished, not Exit: a bar of unknown length has a goroutine that draws its spinner
		// until the bar is finished, and would draw it again under the summary.
		b.pb.Finish()
		b.pb.Clear()
		b.mu.Unlock()
		shown.CompareAndSwap(b, nil)
	}
	if b.desc == "verify" || b.files.Load() == 0 && b.bytes.Load() == 0 {
		return // verify writes its own; a stage that had nothing to do has said so
	}
	line := fmt.Sprintf("%s, %s in %s", counted(int(b.files.Load()), "file"), store.Human(b.bytes.Load()), humanDuration(time.Since(b.start)))
	if n := b.failed.Load(); n > 0 {
		line += fmt.Sprintf(", %d failed", n)
	}
	if b.ctx != nil && b.ctx.Err() != nil {
		line = "interrupted after " + line
	}
	personLine(b.w, fmt.Sprintf("attachctl: %s: %s", b.desc, line))
}

// humanDuration is d for a person: 0.4s, 12s, 3m05s.
func humanDuration(d time.Duration) string {
	switch {
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	default:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
}

// personLine writes one line on standard error on a line of its own (see messages).
func personLine(w io.Writer, line string) {
	io.WriteString(messagesTo(w), line+"\n")
}

// messages is standard error as the commands write their lines to it (the app's ErrWriter): each
// write is put on a line of its own. The bar this process draws is erased first (it is drawn
// again under the line at its next step), and on a terminal the line another stage's bar may be
// drawing is wiped, so that no message is ever glued to a bar, whichever code writes it. The bar
// itself draws on the stream beneath (rawStderr).
type messages struct{ w io.Writer }

func (m messages) Write(p []byte) (int, error) {
	if b := shown.Load(); b != nil && b.w == m.w {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.pb.Clear()
		return m.w.Write(p)
	}
	if f, ok := m.w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		// One write, so that another stage's line cannot come between the wipe and the line.
		if _, err := m.w.Write(append([]byte("\r\x1b[K"), p...)); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return m.w.Write(p)
}

// messagesTo is w written through messages.
func messagesTo(w io.Writer) io.Writer {
	if _, ok := w.(messages); ok || w == nil {
		return w
	}
	return messages{w}
}

// rawStderr is the stream beneath messages.
func rawStderr(w io.Writer) io.Writer {
	if m, ok := w.(messages); ok {
		return m.w
	}
	return w
}

// forPerson reports whether standard error is for a person to read: --progress always, or auto
// and standard error is a terminal; never with --quiet. Progress bars and resolve's one-line
// summary go there only then, so that a pipeline's standard error stays quiet on success.
func (g globals) forPerson() bool {
	if g.quiet || g.progress == "never" {
		return false
	}
	if g.progress == "auto" {
		f, ok := rawStderr(g.stderr).(*os.File)
		return ok && term.IsTerminal(int(f.Fd()))
	}
	return true
}
