package store

import (
	"sync"
	"sync/atomic"
)

// Site is what a backend does to open its location (OpenSite), its own mechanism only: what the
// order of those steps is, and what each finding means, is OpenSite's and Judge's.
type Site interface {
	// Nested refuses a location inside another store or inside an upload (NotNested), reading
	// only.
	Nested() error
	// Look says what is at the location (Seen), read without following a link or writing
	// anything.
	Look() (Seen, error)
	// Make makes the location, which was not there (a folder, 0700); a location with no need of
	// making (an S3 prefix) does nothing.
	Make() error
	// Mark writes the mark (MarkText without limits) and what a store holds from its start (its
	// internal folders); a mark written meanwhile by another upload is no error.
	Mark() error
}

// OpenSite opens the location loc of site, the one order on every backend (docs/store.md, "What
// a location is"): a location inside another store or an upload is refused before anything is
// read of it; what is there is judged (Judge), and a location that is not a store is refused with
// nothing written. Without create that is all: a store that does not exist is empty, and nothing
// is made. With create (an upload, store init), a location not there is made and judged again,
// and a store not marked yet (new, empty, or of an earlier version) is marked.
func OpenSite(loc string, site Site, create bool) (Verdict, error) {
	if err := site.Nested(); err != nil {
		return 0, err
	}
	v, err := JudgeSite(loc, site)
	if err == nil && v == NotThere && create {
		if err = site.Make(); err == nil {
			v, err = JudgeSite(loc, site)
		}
	}
	if err != nil || v == Marked || !create {
		return v, err
	}
	if err := site.Mark(); err != nil {
		return 0, err
	}
	return Marked, nil
}

// JudgeSite judges what site finds at loc (Judge), making and marking nothing.
func JudgeSite(loc string, site Site) (Verdict, error) {
	seen, err := site.Look()
	if err != nil {
		return 0, err
	}
	return Judge(loc, seen)
}

// Opened is a backend's open of its location for the run (one Backend value): judged once for
// reading and once more for the first write, not at every call. A read-open that failed (no
// store, not a store) is said again by every later read without looking again, until an open
// with create succeeds; a store made by that upload is then seen by every later call. Its zero
// value is ready.
type Opened struct {
	mu     sync.Mutex  // serialises the opens, and guards err
	opened atomic.Bool // an open succeeded
	made   atomic.Bool // an open with create succeeded: judged, made and marked
	err    error       // the failed read-open, said again while opened is false
}

// Open opens the location with open unless it is open for create (or, create false, for
// reading) already. open runs under the lock.
func (o *Opened) Open(create bool, open func(create bool) error) error {
	if o.done(create) {
		return nil // judged for this run already: an upload per file need not judge it again
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case o.done(create):
		return nil // opened meanwhile
	case !create && o.err != nil:
		return o.err
	}
	if err := open(create); err != nil {
		if !create {
			o.err = err
		}
		return err
	}
	o.opened.Store(true)
	if create {
		o.made.Store(true)
	}
	return nil
}

// done reports whether an open of the kind create needs is done.
func (o *Opened) done(create bool) bool {
	return o.opened.Load() && (!create || o.made.Load())
}
