// Package sweeps runs the sweep policy (package sweep) over many stores: the mechanism of
// `sweep --stores-under ROOT`, for one cron line over many chats. Each store is swept under its
// own lock; one that another sweep holds past the wait is skipped, not failed, since the sweep
// that holds it is doing the work. Which uploads are stale stays sweep's; finding the stores is
// ops/store/open's.
package sweeps

import (
	"context"
	"errors"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/open"
	"github.com/attachctl/attachctl/sweep"
)

// Options of a sweep of every store below a root.
type Options struct {
	// Sweep is each store's sweep: its cutoffs, the dry run, and how long to wait for a store's
	// lock before it is skipped as held.
	Sweep sweep.Options
	// Open opens a store found; nil: open.Store with its default options. The command passes its
	// own, with the backends' flags.
	Open func(ctx context.Context, dir string) (store.Backend, error)
	// Find finds the stores below root; nil: open.StoresUnder (by their mark, following no link,
	// staying on root's file system).
	Find func(root string) (stores []string, skipped []store.Skip, err error)
	// Skipped, when set, is told of each entry below root that could not be read, before any
	// store is swept.
	Skipped func(store.Skip)
	// Removed, when set, is told of each upload removed (or that would be, in a dry run), with
	// the location of its store. An error from it fails that store's sweep.
	Removed func(location string, r sweep.Removed) error
	// Done, when set, is told of each store as its sweep ends.
	Done func(Store)
}

// Outcome is how one store's sweep ended.
type Outcome int

const (
	Swept       Outcome = iota // swept: its summary says what was removed, kept and skipped
	Held                       // another sweep holds its lock past the wait: skipped
	Failed                     // it could not be opened or swept: Err says why
	Interrupted                // the context ended while it was swept: its summary says what was removed before
)

// Store is what became of one store.
type Store struct {
	Dir     string
	Outcome Outcome
	Summary sweep.Summary
	// Err is why it was held (store.locked, naming the holder), failed (with its code) or
	// interrupted (the context's error); nil when it was swept.
	Err error
}

// Result is what a sweep of every store below a root did.
type Result struct {
	Stores              int // stores found
	Swept, Held, Failed int
	// Total is what every store's sweep removed, and what those swept kept, skipped and failed
	// to remove.
	Total sweep.Summary
}

// Under sweeps every store below root in turn, in the order found, each under its own lock, and
// stops before the next store once ctx ends. The error is for a root that could not be read
// (file.unreadable unless it says otherwise); each store's own outcome is in the result and told
// to o.Done.
func Under(ctx context.Context, root string, o Options) (Result, error) {
	find, openStore := o.Find, o.Open
	if find == nil {
		find = open.StoresUnder
	}
	if openStore == nil {
		openStore = func(ctx context.Context, dir string) (store.Backend, error) {
			return open.Store(ctx, dir, open.Options{})
		}
	}
	var res Result
	stores, skipped, err := find(root)
	if err != nil {
		return res, fault.AsError(err, fault.FileUnreadable)
	}
	res.Stores = len(stores)
	for _, sk := range skipped {
		if o.Skipped != nil {
			o.Skipped(sk)
		}
	}
	for _, dir := range stores {
		if ctx.Err() != nil {
			break
		}
		st := sweepOne(ctx, dir, openStore, o)
		res.Total.Removed += st.Summary.Removed
		res.Total.Bytes += st.Summary.Bytes
		switch st.Outcome {
		case Held:
			res.Held++
		case Failed:
			res.Failed++
		case Swept:
			res.Swept++
			res.Total.Kept += st.Summary.Kept
			res.Total.Skipped = append(res.Total.Skipped, st.Summary.Skipped...)
			res.Total.Failed = append(res.Total.Failed, st.Summary.Failed...)
		}
		if o.Done != nil {
			o.Done(st)
		}
	}
	return res, nil
}

// sweepOne opens and sweeps the store at dir.
func sweepOne(ctx context.Context, dir string, openStore func(context.Context, string) (store.Backend, error), o Options) Store {
	st := Store{Dir: dir}
	b, err := openStore(ctx, dir)
	if err == nil {
		loc := b.Location()
		st.Summary, err = sweep.Run(ctx, b, o.Sweep, func(r sweep.Removed) error {
			if o.Removed == nil {
				return nil
			}
			return o.Removed(loc, r)
		})
	}
	switch {
	case err == nil:
		st.Outcome = Swept
	case errors.Is(err, context.Canceled):
		st.Outcome, st.Err = Interrupted, err
	case fault.CodeOf(err) == fault.StoreLocked:
		st.Outcome, st.Err = Held, err
	default:
		st.Outcome, st.Err = Failed, fault.At(manifest.Quote(dir), err, fault.UploadUnreadable)
	}
	return st
}
