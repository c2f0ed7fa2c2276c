package stage

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/sniff"
)

// Next yields a stage's records one at a time: ok=false at the end, or an error that ends the
// input (a bad manifest line, an unreadable list of paths). Records yielded before it are still
// worked and handed on.
type Next func() (rec *manifest.Record, ok bool, err error)

// Loop is the one record loop every stage runs (sniff, shrink, upload, verify, touch, prompt,
// prepare): it takes the records of Next, sniffs them first when Sniff is set (records that came
// as paths), runs Work on each that carries no error with Jobs workers, tells Failed of each new
// failure, and hands every record to Emit in input order. A command builds one from its flags and
// maps Run's result to its exit code; the loop itself prints nothing.
type Loop struct {
	// Stage names the failures the loop sets ("upload": a record's error says which stage failed).
	Stage string
	// Next is the input. Required.
	Next Next
	// Sniff, when set, is how each record is sniffed before Work (records from path arguments,
	// and every record of the sniff stage).
	Sniff *sniff.Options
	// Work is what the stage does to one record; nil does nothing more (sniff). An error it
	// returns is set on the record with Stage's name.
	Work func(rec *manifest.Record) error
	// Emit is handed every record in input order; an error from it ends the loop.
	Emit func(rec *manifest.Record) error
	// Jobs is how many records are worked on at once (at least 1).
	Jobs int
	// First, when set, is called before the first record that reaches Work; an error from it ends
	// the loop and is returned as it is (a store that does not exist).
	First func() error
	// Settle, when set, is called on each record that carries no error just before it is handed
	// on, in input order; it may fail the record. The upload stage commits its batch there, so
	// that no record names an upload that is not finished yet.
	Settle func(rec *manifest.Record)
	// Window, when set, is how many records may be in flight (taken and not yet handed on): the
	// upload stage's batch commits what was built by the time a record is handed on, so its
	// window is its batch size.
	Window int
	// Flight, when set, counts the records taken and handed on (for a batch's Options.More).
	Flight *Flight
	// Failed, when set, is told of each record's new failure, as it happens.
	Failed func(e *fault.Error)
	// Handed, when set, is told of each record as it is handed on (a progress bar).
	Handed func(rec *manifest.Record)
}

// Result is what a Loop's run came to.
type Result struct {
	// Failed counts the records handed on with an error.
	Failed int
	// NotReached counts the records an interruption kept from Work, each handed on failed
	// (upload.interrupted) so that a later stage fails rather than go on without them.
	NotReached int
	// RestUnread: the input could not be read after the interruption; one record, path "-",
	// stands for what was not read (counted in NotReached).
	RestUnread bool
	// Interrupted: ctx was done before the input ended.
	Interrupted bool
}

// Run runs the loop until its input ends, Emit or First fails, or ctx is done. When ctx is done,
// the records not yet reached are still taken and handed on, each failed; Run then returns with
// Result.Interrupted set. The error is Next's, Emit's or First's, as it came.
func (l Loop) Run(ctx context.Context) (Result, error) {
	var res Result
	do := func(rec *manifest.Record) error {
		if l.Sniff != nil {
			if err := sniff.Fill(rec, *l.Sniff); err != nil {
				rec.Fail("sniff", err, fault.FileUnreadable)
				return nil
			}
		}
		if l.Work == nil {
			return nil
		}
		return l.Work(rec)
	}
	failed := func(rec *manifest.Record) {
		if l.Failed != nil {
			l.Failed(rec.Error)
		}
	}
	// A worker that hands a record on may wait in Settle for its batch to fill: the loop then
	// has one worker more than Jobs, and at most Jobs of them work on records at once, so that
	// the others go on while one waits (with one job the batch would otherwise hold one upload,
	// and one worker would do all the work while another waits).
	jobs, gate := l.Jobs, chan struct{}(nil)
	if l.Settle != nil {
		gate = make(chan struct{}, max(jobs, 1))
		jobs = max(jobs, 1) + 1
	}
	err := OrderedWindow(jobs, l.Window,
		func() (*manifest.Record, bool, error) {
			if ctx.Err() != nil {
				// Interrupted: the records not reached are passed on, each failed, so that a
				// later stage (prompt) fails rather than make a prompt without them.
				rec, ok, err := l.Next()
				if err != nil && !res.RestUnread { // the rest of the input cannot be read
					res.RestUnread, rec, ok = true, &manifest.Record{Path: "-", Name: "-"}, true
					rec.Fail(l.Stage, fault.Errorf(fault.UploadInterrupted, "the rest of the input: not read, interrupted before it; run the same command again"), "")
					res.NotReached++
				} else if ok && !rec.Failed() {
					rec.Fail(l.Stage, fault.Errorf(fault.UploadInterrupted, "%s: not reached: interrupted before it; run the same command again", rec.Path), "")
					res.NotReached++
				}
				if !ok || err != nil && rec == nil {
					l.Flight.end()
					return nil, false, nil
				}
				l.Flight.took()
				return rec, true, nil
			}
			rec, ok, err := l.Next()
			if ok && err == nil && !rec.Failed() && l.First != nil {
				if ferr := l.First(); ferr != nil {
					l.Flight.end()
					return nil, false, ferr
				}
			}
			if ok {
				l.Flight.took()
			} else {
				l.Flight.end()
			}
			return rec, ok, err
		},
		func(rec *manifest.Record) *manifest.Record {
			if !rec.Failed() {
				if gate != nil {
					gate <- struct{}{}
				}
				err := do(rec)
				if gate != nil {
					<-gate
				}
				if err != nil && !rec.Failed() {
					rec.Fail(l.Stage, err, fault.FileUnreadable)
				}
				if rec.Failed() {
					failed(rec)
				}
			}
			l.Flight.done()
			return rec
		},
		func(rec *manifest.Record) error {
			if l.Settle != nil && !rec.Failed() {
				if l.Settle(rec); rec.Failed() {
					failed(rec)
				}
			}
			if rec.Failed() {
				res.Failed++
			}
			if l.Handed != nil {
				l.Handed(rec)
			}
			defer l.Flight.handed()
			return l.Emit(rec)
		})
	res.Interrupted = ctx.Err() != nil
	return res, err
}

// Flight counts a loop's records in flight: taken from the input and not yet handed on. A batch
// that publishes its uploads together asks it whether more records are on their way
// (Options.More) before it commits.
type Flight struct {
	taken, worked, emitted atomic.Int64
	ended                  atomic.Bool
	// Wake, when set, is called when the input ends and when a record's work ends (a waiting
	// batch asks More again).
	Wake func()
}

func (f *Flight) took() {
	if f != nil {
		f.taken.Add(1)
	}
}

// done counts a record whose work ended (uploaded, or failed before).
func (f *Flight) done() {
	if f != nil {
		f.worked.Add(1)
		if f.Wake != nil {
			f.Wake()
		}
	}
}

func (f *Flight) handed() {
	if f != nil {
		f.emitted.Add(1)
	}
}

func (f *Flight) end() {
	if f != nil && !f.ended.Swap(true) && f.Wake != nil {
		f.Wake()
	}
}

// More reports whether more records may still reach the stage's work: one taken is still being
// worked on (sniffed, say, and not yet uploaded), or the input has not ended and fewer than window
// are in flight.
func (f *Flight) More(window int) bool {
	taken := f.taken.Load()
	return taken > f.worked.Load() || !f.ended.Load() && taken-f.emitted.Load() < int64(window)
}

// ErrInterrupted ends a read of the input that a signal cut short (Interruptible).
var ErrInterrupted = errors.New("interrupted")
