package main

import (
	"os"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// bar is a progress bar on standard error, or nothing. Its methods are safe on a nil bar.
type bar struct{ pb *progressbar.ProgressBar }

// newBar makes a bar of total units (-1: unknown), shown when --progress is always, or auto and
// standard error is a terminal, and never with --quiet. unit is "files" or "bytes".
func newBar(c *cli.Context, total int64, desc, unit string) *bar {
	if !forPerson(c) {
		return nil
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(c.App.ErrWriter),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionThrottle(100_000_000),
		progressbar.OptionShowCount(),
		progressbar.OptionClearOnFinish(),
	}
	if unit == "bytes" {
		opts = append(opts, progressbar.OptionShowBytes(true))
	} else {
		opts = append(opts, progressbar.OptionSetItsString(unit))
	}
	return &bar{pb: progressbar.NewOptions64(total, opts...)}
}

func (b *bar) Add(n int64) {
	if b != nil {
		b.pb.Add64(n)
	}
}

// AddTotal grows the bar's total, for bars whose size is learnt as records arrive.
func (b *bar) AddTotal(n int64) {
	if b != nil {
		b.pb.ChangeMax64(b.pb.GetMax64() + n)
	}
}

func (b *bar) Finish() {
	if b != nil {
		b.pb.Finish()
	}
}

// forPerson reports whether standard error is for a person to read: --progress always, or auto
// and standard error is a terminal; never with --quiet. Progress bars and resolve's one-line
// summary go there only then, so that a pipeline's standard error stays quiet on success.
func forPerson(c *cli.Context) bool {
	mode := globalString(c, "progress")
	if globalBool(c, "quiet") || mode == "never" {
		return false
	}
	if mode == "auto" {
		f, ok := c.App.ErrWriter.(*os.File)
		return ok && term.IsTerminal(int(f.Fd()))
	}
	return true
}
