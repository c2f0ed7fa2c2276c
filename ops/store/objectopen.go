package store

import (
	"context"
	"sync"

	"github.com/attachctl/attachctl/manifest/fault"
)

// MarkCheck tells whether a location kept as objects (S3's prefix) is a store, opened in the one
// order of OpenSite, until the mark is seen and from then on for the Store's life: the mark read,
// or without one what is at its top (Judge); with create a location that is not marked is made a
// store by its mark, written create-only once Nested with marks found it inside no other store's
// uploads. A store whose conditional writes were never checked (a new one, or one marked by an
// earlier version) is checked first (ObjectMark.CheckConditions). Before the mark is seen every
// call looks again, so that an upload another process makes the store with is seen.
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
	site := &objectSite{c: c, ctx: ctx}
	v, err := OpenSite(c.M.Loc, site, create)
	if err != nil || v != Marked {
		return v.Store(), err
	}
	if !site.made { // a mark found: its conditional writes checked, once
		if err := c.M.CheckConditions(ctx, site.body, site.version, c.Unsafe); err != nil {
			return false, err
		}
	}
	c.marked = true
	return true, nil
}

// objectSite is a MarkCheck's location for one OpenSite: the mark it read (body at version) and
// whether it marked the store.
type objectSite struct {
	c       *MarkCheck
	ctx     context.Context
	body    []byte
	version string
	made    bool
}

func (s *objectSite) Nested() error { return s.c.Nested(s.ctx, false) }

func (s *objectSite) Look() (Seen, error) {
	var err error
	if s.body, s.version, err = s.c.M.ReadMark(s.ctx); err != nil || s.body != nil {
		return Seen{Mark: s.body != nil}, err
	}
	return s.c.Look(s.ctx)
}

// Make: a prefix needs no making.
func (s *objectSite) Make() error { return nil }

// Mark writes the mark create-only, once its conditional writes are checked (the mark says so),
// and once no store's mark is above the prefix.
func (s *objectSite) Mark() error {
	if err := s.c.Nested(s.ctx, true); err != nil {
		return err
	}
	s.made = true
	return s.c.M.CheckConditions(s.ctx, nil, "", s.c.Unsafe)
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
