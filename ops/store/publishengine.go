package store

import "context"

// The order of a publish of built uploads (docs/store.md, uploads committed in batches), written
// once over a backend's steps (PublishSteps): nothing is placed before its data, its metadata
// and its folder are durable; metadata shared by several uploads is made durable with them and
// placed before any of them is; the places are made durable once, for all; only then is an
// upload done with (what is left of its unfinished upload removed, the upload indexed). An
// upload that fails before it is placed is taken apart (an unfinished upload again, as a crash
// would have left it); one placed whose places could not be made durable is finished, its error
// saying only that its durability is in doubt. Each upload fails alone where its own step
// failed; a step that makes several uploads durable at once fails all it covers. What each step
// does (the fsyncs, the rename, the file system's one call that makes it all durable) is the
// backend's.

// PublishSteps are a backend's steps of publishing built uploads of type T together (Publish).
// A nil step is one the backend does not need.
type PublishSteps[T any] struct {
	// Sync makes t's own files durable, SyncWidth uploads at once (a journaling file system
	// commits together what arrives while it commits); nil where Flush makes everything durable.
	Sync      func(t T) error
	SyncWidth int
	// Shared says whether t's metadata is in the file the uploads of the commit share; Seal
	// makes that file whole before Flush, Share places it after Flush and before any upload is
	// placed. An error of either fails the uploads that share it. Seal nil: no shared file.
	Shared      func(t T) bool
	Seal, Share func() error
	// Flush makes what the steps before wrote durable at once; an error fails every upload.
	Flush func() error
	// Undo takes t apart after err, and returns the error t fails with.
	Undo func(t T, err error) error
	// Begin is called before the first upload is placed; when it returns true, End is called
	// once the uploads placed are done with (FinishedIndex.BeginPlace).
	Begin func() bool
	End   func()
	// Place puts t in the store, taking it apart itself when it cannot (Undo).
	Place func(t T) error
	// Placed makes the places durable.
	Placed func() error
	// Done is told of each upload placed, once the places are durable.
	Done func(t T)
	// Quota, when set, drops the reservation of every upload given (Quota.Done), by its ID, once
	// it is published or failed: either way, its reservation is done with.
	Quota *Quota
	ID    func(t T) string
}

// Publish publishes ts by the steps c, in the order above, and returns each one's error (nil:
// finished).
func Publish[T any](ts []T, c PublishSteps[T]) []error {
	if c.Quota != nil {
		defer func() {
			ids := make([]string, len(ts))
			for i, t := range ts {
				ids[i] = c.ID(t)
			}
			c.Quota.Done(context.Background(), ids...)
		}()
	}
	errs := make([]error, len(ts))
	if c.Sync != nil {
		ForEach(context.Background(), c.SyncWidth, len(ts), func(i int) error {
			errs[i] = c.Sync(ts[i])
			return nil // each upload fails alone
		})
	}
	failShared := func(err error) {
		for i, t := range ts {
			if c.Shared(t) && errs[i] == nil {
				errs[i] = err
			}
		}
	}
	shared := c.Seal != nil
	if shared {
		if err := c.Seal(); err != nil {
			failShared(err)
			shared = false
		}
	}
	if err := c.Flush(); err != nil {
		for i := range errs {
			errs[i] = err
		}
	} else if shared {
		if err := c.Share(); err != nil {
			failShared(err)
		}
	}
	for i, t := range ts {
		if errs[i] != nil {
			errs[i] = c.Undo(t, errs[i])
		}
	}
	if c.Begin != nil && c.Begin() {
		defer c.End() // after Done has indexed what was placed
	}
	var placed []T
	for i, t := range ts {
		if errs[i] == nil {
			if errs[i] = c.Place(t); errs[i] == nil {
				placed = append(placed, t)
			}
		}
	}
	if len(placed) > 0 {
		if err := c.Placed(); err != nil {
			for i := range ts {
				if errs[i] == nil {
					errs[i] = err // placed; only their durability is in doubt
				}
			}
			return errs
		}
	}
	for _, t := range placed {
		c.Done(t)
	}
	return errs
}
