package store

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// Marking uploads used, written once over a backend's primitives (prim.go says why).
//
// The rules (Backend.MarkUsed): every id is checked first, then marked, so that a call refused
// for one id marks none where it can; a use that races a sweep either keeps the upload or is
// upload.missing, and never leaves a marker on an upload that is then removed. What keeps a use
// and a sweep apart is the backend's: the local store holds its marker lock shared throughout (a
// sweep takes it exclusive to set uploads aside), so nothing moves between the check and the
// mark; S3 has no lock, and every marker write is conditional on the marker as it was read (a
// sweep replaces it by a tombstone, conditionally too, before it removes anything). The engine
// decides over both: a write that lost goes again on a fresh look, a tombstone is a removal under
// way, and a write that does not prove the upload was there is checked once more and undone when
// it is gone.

// UseProperties are what a backend's marking can do, declared once by the backend.
type UseProperties struct {
	// Jobs is how many markers are written at once (at least 1). 1: one after another in the
	// order of the ids, the first failure stopping the rest.
	Jobs int
	// Where names the store in messages (its location).
	Where string
}

// UseTarget is what a backend's look-up found of one id, for its marker's write.
type UseTarget struct {
	// Missing: there is no finished upload of the id (none, an unfinished one, one removed), which
	// the engine words the same on every backend (NotFinished).
	Missing bool
	// Err refuses the id in the backend's words, with its own code (its metadata breaks a rule, a
	// marker that cannot be read).
	Err error
	// Swept: a sweep has decided to remove it (S3's tombstone): the use is upload.missing.
	Swept bool
	// Note is the backend's own, from the look-up to WriteUse (the marker as read, a folder open).
	Note any
}

// ErrUseRaced is WriteUse's answer when its conditional write lost: another use or a sweep wrote
// the marker first. The engine looks again and goes again.
var ErrUseRaced = errors.New("the marker changed since it was read")

// useTries is how many conditional writes of one marker may lose before the use gives up.
const useTries = 20

// UseBackend is what a backend implements so that MarkUsed, written once in this package
// (MarkUsedOn), runs over it. Every method is given valid ids. LookUpUses, WriteUse and its
// check are called from UseProperties.Jobs goroutines at once.
type UseBackend interface {
	UseProperties() UseProperties
	// HoldUses holds back a sweep's removal while the ids are checked and marked (a lock taken
	// shared), or checks what a backend whose writes are conditional needs first (is there a
	// store). The release is called once the marking is over. upload.missing: there is no store,
	// so no upload (a lock that is not there to take), and nothing is asked after it.
	HoldUses(ctx context.Context, ids []string) (release func(), err error)
	// LookUpUses finds each id's finished upload and the state of its marker, by id. An error
	// is the whole call's (a store that does not answer); a refused id is its target's Err. It
	// is asked again of one id after a write of its marker lost.
	LookUpUses(ctx context.Context, ids []string) ([]UseTarget, error)
	// WriteUse writes the use marker of id at at, conditionally on the marker as t found it
	// (ErrUseRaced when that write lost; any other error is coded). check is nil when the write
	// shows the upload was still there (it replaced the marker read beside it, or the hold keeps
	// it in place); otherwise it checks the finished upload once more (upload.missing when it is
	// gone), and undo removes the marker just written, and only that one.
	WriteUse(ctx context.Context, id string, t *UseTarget, at time.Time) (check func() error, undo func(), err error)
}

// MarkUsedOn is Backend.MarkUsed over b: see there and above.
func MarkUsedOn(ctx context.Context, b UseBackend, ids []string, at time.Time) error {
	for _, id := range ids {
		if err := ValidID(id); err != nil {
			return err
		}
	}
	p := b.UseProperties()
	release, err := b.HoldUses(ctx, ids)
	switch {
	case fault.CodeOf(err) == fault.UploadMissing && len(ids) > 0:
		return NotFinished(ids[0], p.Where) // a store not made yet holds no upload
	case fault.CodeOf(err) == fault.UploadMissing:
		return nil
	case err != nil:
		return err
	}
	defer release()
	targets, err := b.LookUpUses(ctx, ids)
	if err != nil {
		return err
	}
	// Every id is checked before any is marked: one refused marks none.
	for i, id := range ids {
		if err := refused(p, id, targets[i]); err != nil {
			return err
		}
	}
	return ForEach(ctx, max(p.Jobs, 1), len(ids), func(i int) error {
		return markOne(ctx, b, p, ids[i], targets[i], at)
	})
}

// NotFinished is the refusal of an id that names no finished upload of the store at where, in one
// wording on every backend (rm says it so too).
func NotFinished(id, where string) error {
	return fault.Errorf(fault.UploadMissing, "upload %s: not a finished upload in store %s", id, where)
}

// NotUnfinished is the error of an unfinished upload id that is not in the store where.
func NotUnfinished(id, where string) error {
	return fault.Errorf(fault.UploadMissing, "upload %s: no unfinished upload in store %s", id, where)
}

// refused is the error of a target that cannot be marked, nil for one that can.
func refused(p UseProperties, id string, t UseTarget) error {
	switch {
	case t.Missing:
		return NotFinished(id, p.Where)
	case t.Err != nil:
		return t.Err
	case t.Swept:
		return fault.Errorf(fault.UploadMissing, "upload %s: being removed by a sweep of store %s", id, p.Where)
	}
	return nil
}

// markOne writes the marker of one id, going again on a fresh look as long as its write loses.
func markOne(ctx context.Context, b UseBackend, p UseProperties, id string, t UseTarget, at time.Time) error {
	for try := 0; ; try++ {
		check, undo, err := b.WriteUse(ctx, id, &t, at)
		if err == nil && check == nil {
			return nil
		}
		if err == nil {
			// Written where there was no marker to replace: a sweep may have removed the upload
			// meanwhile, and no marker outlives its upload.
			err = check()
			if fault.CodeOf(err) == fault.UploadMissing {
				undo()
			}
			return err
		}
		if !errors.Is(err, ErrUseRaced) {
			return err
		}
		if try == useTries {
			return fault.Errorf(fault.StoreLocked, "upload %s: its marker kept changing under %d tries", id, try)
		}
		// Another use or a sweep wrote first: look again (LookUpUses of this id) and go again.
		ts, err := b.LookUpUses(ctx, []string{id})
		if err != nil {
			return err
		}
		if t = ts[0]; t.Missing || t.Err != nil || t.Swept {
			return refused(p, id, t)
		}
	}
}

// ForEach runs f for 0..n-1, jobs at a time, and returns the first error; once one failed, or
// ctx is cancelled, no further f starts (then ctx.Err() is returned).
func ForEach(ctx context.Context, jobs, n int, f func(int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  int
	)
	for w := 0; w < min(jobs, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				stop := first != nil || i >= n
				mu.Unlock()
				if stop || ctx.Err() != nil {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}
