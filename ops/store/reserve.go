package store

import (
	"context"
	"encoding/json"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// Limits hold across processes by reservations (docs/store.md, "Limits"): an upload about to
// begin takes, under the store's limits lock, a reservation keyed by its upload id, after
// counting what the store holds together with the live reservations of every other process. A
// reservation is released when the upload is published (it is then counted as a finished upload,
// and the next check drops it), when it fails, or when it expires: its holder's process is gone
// (same host) or it is older than ReserveLease (another host).
//
// The rules are here, once; a backend offers only the primitives of Reserver.

// Reserver is a backend's part of the reservations: a lock, and create-only, listed and removed
// reservation records.
type Reserver interface {
	// LockLimits takes the store's limits lock, waiting at most wait (store.locked after), and
	// makes the store's place for reservations when missing.
	LockLimits(ctx context.Context, wait time.Duration) (LimitsLock, error)
	// PutReservation writes the reservation key (an upload id) with body, create-only.
	PutReservation(ctx context.Context, key string, body []byte) error
	// Reservations returns every reservation's body by key (none for a store without any).
	Reservations(ctx context.Context) (map[string][]byte, error)
	// DropReservation removes the reservation key; one that is not there is no error.
	DropReservation(ctx context.Context, key string) error
}

// LimitsLock is the held limits lock.
type LimitsLock interface {
	// Unlock releases the lock. held is false when the lock was lost while it was held (a
	// backend whose lock is a lease that another took over): what was written under it must be
	// undone and done again.
	Unlock(ctx context.Context) (held bool, err error)
}

// Reservation is one upload's hold on a store's limits, from before it begins until it is
// published.
type Reservation struct {
	ID     string `json:"id"`     // the upload's id
	Name   string `json:"name"`   // its name, for messages
	Size   int64  `json:"size"`   // its declared size (-1: open, only counted as one upload)
	Holder string `json:"holder"` // the process that holds it (Holder.String)
}

// ReserveLease is how long a reservation holds space when its holder is on another host (whose
// processes cannot be asked); ReserveMaxAge how long at most when it is on this host and its
// process is alive (a pid may be reused).
var (
	ReserveLease  = time.Hour
	ReserveMaxAge = 24 * time.Hour
)

// LimitsWait is how long an upload waits for the limits lock (held only while one upload is
// checked and reserved) before it is store.locked.
var LimitsWait = 30 * time.Second

// Live reports whether r still holds space at now. host is this host as a Holder names it, gone
// whether a pid of this host is no more.
func (r Reservation) Live(now time.Time, host string, gone func(pid int) bool) bool {
	h, ok := ParseHolder(r.Holder)
	if !ok {
		return false
	}
	age := now.Sub(h.Since)
	if h.Host == host {
		return age < ReserveMaxAge && !gone(h.PID)
	}
	return age < ReserveLease
}

// UsageWith is what the store holds for its limits: the uploads of ls, and the live reservations
// of rs not yet in it (one still unfinished counts at least its declared size). drop are the keys
// of the reservations done with: published (counted as finished uploads), expired or unreadable.
func UsageWith(ls *Listing, rs map[string]Reservation, live func(Reservation) bool) (used Usage, drop []string) {
	used = UsageOf(ls)
	byID := map[string]Entry{}
	for _, e := range ls.Entries {
		if !e.Batch {
			byID[e.ID] = e
		}
	}
	for key, r := range rs {
		if ValidID(key) != nil {
			continue // not a reservation: left alone
		}
		e, listed := byID[r.ID]
		switch {
		case r.ID != key || listed && e.Finished || !live(r):
			drop = append(drop, key)
		case listed:
			used.Bytes += max(r.Size-e.Size, 0)
		default:
			used.Files++
			used.Bytes += max(r.Size, 0)
		}
	}
	sort.Strings(drop)
	return used, drop
}

// Quota admits uploads against a store's limits across processes. The zero Quota is ready once
// its fields are set.
type Quota struct {
	R    Reserver
	Loc  string                                      // the store, for messages
	List func(ctx context.Context) (*Listing, error) // the store's uploads

	mu sync.Mutex // one admission of this process at a time
}

// Admit checks one more upload id of size bytes (-1: open) named name against l and, when it is
// admitted, reserves its room: release, to be called when the upload failed, drops the
// reservation (once published it is dropped by the next check; calling release then is
// harmless).
func (q *Quota) Admit(ctx context.Context, l Limits, id, name string, size int64) (release func(), err error) {
	nothing := func() {}
	if l.None() {
		return nothing, nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	me := Me()
	body, _ := json.Marshal(Reservation{ID: id, Name: name, Size: size, Holder: me.String()})
	deadline := time.Now().Add(LimitsWait)
	for {
		held, err := q.admitOnce(ctx, l, id, name, size, body, max(time.Until(deadline), 0))
		if err != nil {
			return nothing, err
		}
		if held {
			return func() { q.R.DropReservation(context.WithoutCancel(ctx), id) }, nil
		}
		// The lock was taken over while this reservation was written: it may not have been
		// counted by the other; undone, and done again.
		if err := q.R.DropReservation(ctx, id); err != nil {
			return nothing, err
		}
	}
}

// admitOnce is one check and reservation under the lock; held is false when the lock was lost
// meanwhile (the reservation written is then to be undone).
func (q *Quota) admitOnce(ctx context.Context, l Limits, id, name string, size int64, body []byte, wait time.Duration) (held bool, err error) {
	lk, err := q.R.LockLimits(ctx, wait)
	if err != nil {
		return false, err
	}
	unlock := func() (bool, error) {
		held, uerr := lk.Unlock(context.WithoutCancel(ctx))
		if err == nil {
			err = uerr
		}
		return held, err
	}
	raw, err := q.R.Reservations(ctx)
	if err != nil {
		return unlock()
	}
	ls, err := q.List(ctx)
	if err != nil {
		return unlock()
	}
	rs := map[string]Reservation{}
	for key, b := range raw {
		var r Reservation
		json.Unmarshal(b, &r) // unreadable: dropped as not live
		rs[key] = r
	}
	now, host := time.Now(), ThisHost()
	used, drop := UsageWith(ls, rs, func(r Reservation) bool { return r.Live(now, host, PIDGone) })
	for _, key := range drop {
		if err = q.R.DropReservation(ctx, key); err != nil {
			return unlock()
		}
	}
	if err = l.Admit(q.Loc, name, size, used); err != nil {
		return unlock()
	}
	if err = q.R.PutReservation(ctx, id, body); err != nil {
		return unlock()
	}
	return unlock()
}

// ThisHost is this host as a Holder names it.
func ThisHost() string {
	host, _ := os.Hostname()
	return strings.Join(strings.Fields(host), "_")
}
