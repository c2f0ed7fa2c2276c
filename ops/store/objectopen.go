package store

import (
	"context"
	"sync"

	"github.com/attachctl/attachctl/manifest/fault"
)

// MarkCheck tells whether a location kept as objects (S3's prefix) is a store, once for the
// Store's life: by its mark (ObjectMark), or without one by what is at its top (Judge). With
// create a location that is not marked is made a store by its mark, written create-only, once
// Nested with marks found it inside no other store's uploads. A store whose conditional writes
// were never checked (a new one, or one marked by an earlier version) is checked first
// (ObjectMark.CheckConditions). The answer is kept once the mark is seen; before, every call
// looks again, so that an upload that makes the store is seen by the calls after it.
type MarkCheck struct {
	M      ObjectMark
	Unsafe bool // go on without the check of conditional writes (the user's word)
	// Look reads some of the names at the top of a location that has no mark (at most
	// JudgeNames), for Judge.
	Look func(ctx context.Context) (Seen, error)
	// Nested refuses a location inside another store (NotNested): by its path, and with marks
	// by the marks above it too, which is asked only before a store is made.
	Nested func(ctx context.Context, marks bool) error

	mu     sync.Mutex
	marked bool // the mark was seen or made
}

// Check tells whether the location is a store (false: not made yet), and with create makes it
// one (Judge refuses what is not).
func (c *MarkCheck) Check(ctx context.Context, create bool) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.marked {
		return true, nil
	}
	if err := c.Nested(ctx, false); err != nil {
		return false, err
	}
	body, version, err := c.M.ReadMark(ctx)
	seen := Seen{Mark: body != nil}
	if err == nil && body == nil {
		seen, err = c.Look(ctx)
	}
	if err != nil {
		return false, err
	}
	v, err := Judge(c.M.Loc, seen)
	switch {
	case err != nil:
		return false, err
	case v != Marked && !create:
		return v.Store(), nil
	case v != Marked: // marked here, create-only
		if err := c.Nested(ctx, true); err != nil {
			return false, err
		}
		body, version = nil, ""
	}
	if err := c.M.CheckConditions(ctx, body, version, c.Unsafe); err != nil {
		return false, err
	}
	c.marked = true
	return true, nil
}

// Holds checks the upload id, then the store for readers: a store that is not there yet holds no
// upload, upload.missing.
func (c *MarkCheck) Holds(ctx context.Context, id string) error {
	if err := ValidID(id); err != nil {
		return err
	}
	ok, err := c.Check(ctx, false)
	if err != nil {
		return err
	}
	if !ok {
		return fault.Errorf(fault.UploadMissing, "upload %s: not in store %s (the store is empty)", id, c.M.Loc)
	}
	return nil
}
