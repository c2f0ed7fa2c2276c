package store

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// A lease is a lock of a store that keeps its bookkeeping as objects (S3): a small object that
// holds for a while after each write, so that a holder killed frees the store when it runs out.
// The sweep lock and the limits lock are one kind of lease. How one is created, taken over,
// renewed, read back after a refusal and let go, and what its body and metadata hold, is here,
// once (docs/store.md, "S3 stores"); the backend keeps the calls (LeaseObjects).

// LeaseObjects is Objects whose objects carry metadata (S3: x-amz-meta-*), where a lease keeps
// its holder and its nonce.
type LeaseObjects interface {
	Objects
	// PutMeta is Put of body with meta: a write the backend took whose answer was lost is found
	// to be its own by meta's nonce (LeaseNonceKey). It returns the object written; refused
	// (ErrObjectChanged), the object found there (Version "" when it could not be read).
	PutMeta(ctx context.Context, key, version string, body []byte, meta map[string]string) (Object, error)
}

// The metadata keys of a lease: its holder, named so that a sweep or rm that cannot have it says
// who has it, and the holder's nonce.
const (
	LeaseHolderKey = "holder"
	LeaseNonceKey  = "nonce"
)

// LeaseKey is the object of the lease tag: .attachctl/<tag>.lock.
func LeaseKey(tag string) string { return InternalDir + "/" + tag + ".lock" }

// Lease is a lease as held by this process (NewLease, Take, Unlock).
type Lease struct {
	o           LeaseObjects
	loc         string // the store, for messages
	key         string
	tag         string        // the body's first word: "sweep", "limits" (errors say "<tag> lock")
	dur         time.Duration // how long each write holds it
	nonceInBody bool          // the body ends with the nonce
	nonce       string
	meta        map[string]string // holder and nonce
	version     string            // of the lock as last written (or found to be its own)

	stop, done chan struct{} // the renewal's (keep), nil when it is not renewed
	lost       atomic.Bool   // a renewal lost: another holder has the lock now (or nobody)
}

// NewLease is the lease tag of the store at loc (for messages), each write of which holds for
// dur; nonceInBody: its body ends with its holder's nonce too.
func NewLease(o LeaseObjects, loc, tag string, dur time.Duration, nonceInBody bool) *Lease {
	nonce := newNonce()
	return &Lease{o: o, loc: loc, key: LeaseKey(tag), tag: tag, dur: dur, nonceInBody: nonceInBody, nonce: nonce,
		meta: map[string]string{LeaseHolderKey: Me().String(), LeaseNonceKey: nonce}}
}

// body is "<tag> <until>[ <nonce>]\n", until when this write holds.
func (l *Lease) body() string {
	b := l.tag + " " + time.Now().UTC().Add(l.dur).Format(time.RFC3339Nano)
	if l.nonceInBody {
		b += " " + l.nonce
	}
	return b + "\n"
}

// expired tells whether a lock's body says its lease ran out, or is not of the form body writes.
func (l *Lease) expired(body []byte) bool {
	f := strings.Fields(string(body))
	if len(f) != len(strings.Fields(l.body())) {
		return true
	}
	until, _ := time.Parse(time.RFC3339Nano, f[1])
	return time.Now().After(until)
}

// put writes the lock over version (PutMeta: a refused write that finds this holder's nonce is
// its own); refused, it returns what holds the lock now (its Version "" when it could not be read).
func (l *Lease) put(ctx context.Context, version string) (Object, error) {
	o, err := l.o.PutMeta(ctx, l.key, version, []byte(l.body()), l.meta)
	if err == nil {
		l.version = o.Version
	}
	return o, err
}

// Take takes the lock, waiting up to wait (pausing from pause up to most between tries), and
// keeps it renewed until Unlock. A lock still held then is store.locked, naming its holder (as
// HeldBy names it): running says what holding it means, who is "that sweep". A lock whose lease
// ran out, or whose body is not a lease's, is taken over, over the version read.
func (l *Lease) Take(ctx context.Context, wait, pause, most time.Duration, running, who string) error {
	deadline := time.Now().Add(wait)
	for ; ; pause = min(2*pause, most) {
		found, err := l.put(ctx, "")
		if err == nil {
			l.keep()
			return nil
		}
		if !errors.Is(err, ErrObjectChanged) {
			return objectErr(l.tag+" lock", err, fault.StoreUnreachable)
		}
		if found.Version != "" && l.expired(found.Body) {
			if found, err = l.put(ctx, found.Version); err == nil {
				l.keep()
				return nil
			}
		}
		if time.Now().Add(pause).After(deadline) {
			// The holder the lock read back names (none known: a lock of an earlier version, or
			// one that could not be read).
			h, known := ParseHolder(found.Meta[LeaseHolderKey])
			return fault.Errorf(fault.StoreLocked, "store %s: the %s lock%s %s %s (free at the latest %v after %s stopped)",
				l.loc, l.tag, running, l.key, HeldBy(h, known, wait), l.dur, who)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
	}
}

// keep renews the lock taken every dur/4 until Unlock, so that a holder that holds it longer
// than its lease (a sweep; a limits check that lists a large store) keeps it: each renewal is
// written over the version written last. Once one loses (another holder has the lock now, or
// nobody: it is gone), Lost says so from then on; the renewals go on, as one that failed
// otherwise is tried again at the next.
func (l *Lease) keep() {
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(l.done)
		t := time.NewTicker(l.dur / 4)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
			}
			if _, err := l.put(context.Background(), l.version); errors.Is(err, ErrObjectChanged) {
				l.lost.Store(true)
			}
		}
	}()
}

// Lost tells whether a renewal found the lock another's (or gone) since it was taken.
func (l *Lease) Lost() bool { return l.lost.Load() }

// Unlock lets the lock go (LimitsLock's, and the sweep's): held is whether it was still this
// holder's, read back (a server may let two create-only writes that race both succeed). It is
// removed only while it is the one read.
func (l *Lease) Unlock(ctx context.Context) (held bool, err error) {
	if l.stop != nil {
		close(l.stop)
		<-l.done
		l.stop = nil
	}
	o, err := l.o.Get(ctx, l.key)
	switch {
	case errors.Is(err, ErrNoObject):
		return false, nil
	case err != nil:
		return false, objectErr(l.tag+" lock", err, fault.StoreUnreachable)
	case o.Meta[LeaseNonceKey] != l.nonce:
		return false, nil
	}
	err = l.o.Delete(ctx, l.key, o.Version)
	if errors.Is(err, ErrObjectChanged) { // taken over since it was read: the next holder's now
		err = nil
	}
	return true, objectErr(l.tag+" lock", err, fault.StoreUnreachable)
}
