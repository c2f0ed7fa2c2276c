package store

import (
	"context"
	"encoding/json"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
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

// DefaultLimitsWait is how long an upload waits for the limits lock (held only while one upload
// is checked and reserved) before it is store.locked, when Quota.Wait does not say.
const DefaultLimitsWait = 30 * time.Second

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
		switch {
		case e.Batch:
		case !e.Finished && e.Name == "" && !reserved(rs, e.ID, live):
			// An unfinished entry without readable metadata that no live reservation names is
			// no upload: a batch's staging partial being made or removed (the listing cannot
			// tell it until its info is written, or after it is gone), or what a crash left
			// that nothing can resume. Counted, it made one too many: two uploads of five
			// finished against a room of three, each refusal saying "holds 3".
			used.Files--
			used.Bytes -= e.Size
		default:
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

// reserved reports whether rs holds a live reservation of upload id.
func reserved(rs map[string]Reservation, id string, live func(Reservation) bool) bool {
	r, ok := rs[id]
	return ok && r.ID == id && live(r)
}

// Quota admits uploads against a store's limits across processes: every rule of the limits
// (reading them once, admitting a new upload, a chunk's room, dropping what is published,
// setting them once) is here, and a backend gives only its primitives: R, List and M. It is the
// backend's Limiter. The zero Quota is ready once its fields are set.
type Quota struct {
	R    Reserver
	Loc  string                                      // the store, for messages
	List func(ctx context.Context) (*Listing, error) // the store's uploads
	// M keeps the store's mark, where its limits are; they are read once, and kept. Nil only
	// where the rules are tested without a store: no limits, and no SetLimits.
	M      Marker
	MarkAt string // where the mark is, for messages ("": nowhere a person edits it)
	// Wait is how long an upload waits for the limits lock before it is store.locked (0:
	// DefaultLimitsWait): the command's --wait.
	Wait time.Duration

	mu sync.Mutex // one admission of this process at a time

	lmu    sync.Mutex // guards known and limits
	known  bool
	limits Limits

	hmu      sync.Mutex      // guards held and renewing
	held     map[string]bool // the reservations this process holds, renewed (keep) until done with
	renewing bool            // renew runs
}

func (q *Quota) wait() time.Duration {
	if q.Wait > 0 {
		return q.Wait
	}
	return DefaultLimitsWait
}

// Limits returns the store's limits, read once (an error is not kept: the next call reads again).
func (q *Quota) Limits(ctx context.Context) (Limits, error) {
	q.lmu.Lock()
	defer q.lmu.Unlock()
	if q.known {
		return q.limits, nil
	}
	l, _, _, err := q.read(ctx)
	if err != nil {
		return l, err
	}
	q.known, q.limits = true, l
	return l, nil
}

// read reads the store's limits from its mark, and the mark's bytes and version.
func (q *Quota) read(ctx context.Context) (Limits, []byte, string, error) {
	if q.M == nil {
		return Limits{}, nil, "", nil
	}
	b, ver, err := q.M.ReadMark(ctx)
	if err != nil {
		return Limits{}, nil, "", err
	}
	l, err := ParseMark(q.MarkAt, b)
	return l, b, ver, err
}

// SetLimits is `store init`, the same on every backend: the store is made, and its limits set
// once. The limits it has are kept when they are l (no change) or when it has some
// (upload.invalid, naming the mark to edit by hand); a store without any gets l in its mark.
func (q *Quota) SetLimits(ctx context.Context, l Limits) error {
	if l.MaxFile < 0 || l.MaxBytes < 0 || l.MaxFiles < 0 {
		return fault.Errorf(fault.UploadInvalid, "store %s: a limit is negative", q.Loc)
	}
	if err := q.M.MakeStore(ctx); err != nil {
		return err
	}
	have, b, ver, err := q.read(ctx)
	switch {
	case err != nil:
		return err
	case have == l:
	case !have.None():
		how := ""
		if q.MarkAt != "" {
			how = " (or by editing " + q.MarkAt + ")"
		}
		return fault.Errorf(fault.UploadInvalid, "store %s: already has limits (%s); they are set once, when the store is made%s", q.Loc, have, how)
	default:
		if err := q.M.ReplaceMark(ctx, MarkWith(b, l), ver); err != nil {
			return err
		}
	}
	q.lmu.Lock()
	q.known, q.limits = true, l
	q.lmu.Unlock()
	return nil
}

// AdmitNew gives a new upload of size bytes (-1: open) named name its id and admits it (Admit),
// before anything of it is kept; release drops the reservation of an upload that failed.
func (q *Quota) AdmitNew(ctx context.Context, name string, size int64) (id string, release func(), err error) {
	if id, err = NewID(); err != nil {
		return "", nil, err
	}
	release, err = q.AdmitID(ctx, id, name, size)
	return id, release, err
}

// AdmitID admits the new upload id (one a batch claimed first) with the store's limits (Admit).
func (q *Quota) AdmitID(ctx context.Context, id, name string, size int64) (release func(), err error) {
	l, err := q.Limits(ctx)
	if err != nil {
		return func() {}, err
	}
	return q.Admit(ctx, l, id, name, size)
}

// Chunk is Grow for a chunk of n bytes (-1: not known before it is read) at offset cur of the
// unfinished upload id named name, with the store's limits.
func (q *Quota) Chunk(ctx context.Context, id, name string, cur, n int64) (room int64, over func(end int64) error, release func(), err error) {
	l, err := q.Limits(ctx)
	if err != nil {
		return -1, nil, func() {}, err
	}
	end := int64(-1)
	if n >= 0 {
		end = cur + n
	}
	return q.Grow(ctx, l, id, name, cur, end)
}

// Done drops the reservations of the uploads ids, published (each counts as a finished upload
// now) or dropped. A store whose limits were not read this run took no reservation in it.
func (q *Quota) Done(ctx context.Context, ids ...string) {
	q.lmu.Lock()
	l, known := q.limits, q.known
	q.lmu.Unlock()
	if !known || l.None() {
		return
	}
	for _, id := range ids {
		q.Drop(context.WithoutCancel(ctx), id)
	}
}

// Drop drops the reservation of upload id, done with (dropped or published), and stops its
// renewal first, so that a renewal under way does not write it again.
func (q *Quota) Drop(ctx context.Context, id string) error {
	q.forget(id)
	return q.R.DropReservation(ctx, id)
}

// Admit checks one more upload id of size bytes (-1: open) named name against l and, when it is
// admitted, reserves its room: release, to be called when the upload failed, drops the
// reservation (once published it is dropped by the next check; calling release then is
// harmless). Its reservation names this process its Holder.
func (q *Quota) Admit(ctx context.Context, l Limits, id, name string, size int64) (release func(), err error) {
	nothing := func() {}
	if l.None() {
		return nothing, nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	r := Reservation{ID: id, Name: name, Size: size, Holder: Me().String()}
	body, _ := json.Marshal(r)
	deadline, wait := time.Now().Add(q.wait()), q.wait()
	for ; ; wait = max(time.Until(deadline), 0) {
		held, err := q.underLock(ctx, wait, func(c count) error {
			used, drop := c.usage("")
			if err := c.drop(ctx, drop); err != nil {
				return err
			}
			if err := l.Admit(q.Loc, r.Name, r.Size, used); err != nil {
				return err
			}
			return q.R.PutReservation(ctx, r.ID, body)
		})
		if err != nil {
			return nothing, err
		}
		if held {
			q.keep(r.ID)
			return func() { q.Drop(context.WithoutCancel(ctx), r.ID) }, nil
		}
		// The lock was taken over while this reservation was written: it may not have been
		// counted by the other; undone, and done again.
		if err := q.R.DropReservation(ctx, r.ID); err != nil {
			return nothing, err
		}
	}
}

// Grow checks that the unfinished upload id named name may grow from cur bytes to end (end < 0:
// to as much as the limits leave, for a chunk whose length is not known before it is read), and
// reserves its room up to there while the bytes are written: room is how many bytes it may add
// (-1: no limit), over the refusal for a chunk that turns out to need more, release drops what
// was reserved once the bytes are written (or not). Each chunk of a step-by-step upload is a
// process of its own; counted with the live reservations, two chunks or a chunk and a new
// upload never take the same room. The reservation is renewed (keep) until release: a chunk
// written for longer than ReserveLease (a large one, or over a slow link) keeps its room, where
// another process's check would otherwise take it for one whose holder died.
func (q *Quota) Grow(ctx context.Context, l Limits, id, name string, cur, end int64) (room int64, over func(end int64) error, release func(), err error) {
	nothing := func() {}
	if l.MaxFile == 0 && l.MaxBytes == 0 {
		return -1, nil, nothing, nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	wasHeld := q.holds(id) // renewed for an admission of this process, after the chunk too
	deadline, wait := time.Now().Add(q.wait()), q.wait()
	for ; ; wait = max(time.Until(deadline), 0) {
		var wrote, kept bool
		var own Reservation
		held, err := q.underLock(ctx, wait, func(c count) error {
			var ownLive bool
			own, ownLive = c.rs[id]
			ownLive = ownLive && own.ID == id && c.live[id]
			used, drop := c.usage(id) // every other upload; this one counted at cur below
			if err := c.drop(ctx, drop); err != nil {
				return err
			}
			used.Bytes += cur
			over = func(e int64) error { return l.AdmitBytes(q.Loc, name, cur, e, used) }
			room = -1
			if l.MaxFile > 0 {
				room = max(l.MaxFile-cur, 0)
			}
			if l.MaxBytes > 0 {
				if r := max(l.MaxBytes-used.Bytes, 0); room < 0 || r < room {
					room = r
				}
			}
			want := end
			if want < 0 {
				want = cur + room
			}
			if ownLive && own.Size >= want && (l.MaxFile == 0 || want <= l.MaxFile) {
				kept = true // its own live reservation (a Begin of this process) holds it already
				return nil
			}
			if err := over(want); err != nil {
				return err
			}
			if _, had := c.rs[id]; had { // replaced: create-only puts take no second one
				if err := q.R.DropReservation(ctx, id); err != nil {
					return err
				}
				kept = ownLive // given back once the chunk is written
			}
			body, _ := json.Marshal(Reservation{ID: id, Name: name, Size: want, Holder: Me().String()})
			if err := q.R.PutReservation(ctx, id, body); err != nil {
				return err
			}
			wrote = true
			return nil
		})
		if err != nil {
			return cur, nil, nothing, err
		}
		switch {
		case held && !wrote:
			return room, over, nothing, nil
		case held && kept:
			// The upload's own reservation (a Begin of this process, still live) is put back
			// as it was, under the lock, so that no check meanwhile misses it; renewed, as
			// keep renews it.
			q.keep(id)
			own.Holder = Me().String()
			back, _ := json.Marshal(own)
			return room, over, func() {
				q.mu.Lock()
				defer q.mu.Unlock()
				if !wasHeld {
					q.forget(id)
				}
				q.underLock(context.WithoutCancel(ctx), q.wait(), func(count) error {
					if err := q.R.DropReservation(context.WithoutCancel(ctx), id); err != nil {
						return err
					}
					return q.R.PutReservation(context.WithoutCancel(ctx), id, back)
				})
			}, nil
		case held:
			q.keep(id)
			return room, over, func() {
				if !wasHeld {
					q.forget(id) // first, so that a renewal under way does not write it again
				}
				q.R.DropReservation(context.WithoutCancel(ctx), id)
			}, nil
		}
		if wrote {
			if err := q.R.DropReservation(ctx, id); err != nil {
				return cur, nil, nothing, err
			}
		}
	}
}

// Hold holds the unfinished upload id named name, size bytes written, in the store's limits while
// it is published. A publish moves an upload from unfinished to finished, and a check whose
// listing runs meanwhile may find it in neither place (a listing is no snapshot); the upload's
// reservation, renewed while the publish runs, counts it then. Nothing is checked: its bytes are
// in the store already, and a finish is not refused for a store that is full. A live reservation
// of the upload that holds as much already (its Begin's, in this process) is left as it is.
// done is called once the publish is over: published, the reservation is dropped (the upload is
// counted as finished now); not, the upload's own reservation is put back as it was. Hold waits
// for the limits lock as an admission does (store.locked after Wait).
func (q *Quota) Hold(ctx context.Context, id, name string, size int64) (done func(published bool), err error) {
	nothing := func(bool) {}
	l, err := q.Limits(ctx)
	if err != nil || l.None() {
		return nothing, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	wasHeld := q.holds(id)
	body, _ := json.Marshal(Reservation{ID: id, Name: name, Size: size, Holder: Me().String()})
	var back []byte // the upload's own live reservation, replaced
	deadline, wait := time.Now().Add(q.wait()), q.wait()
	for ; ; wait = max(time.Until(deadline), 0) {
		var wrote bool
		held, err := q.underLock(ctx, wait, func(c count) error {
			own, had := c.rs[id]
			live := had && own.ID == id && c.live[id]
			if live && own.Size >= size {
				return nil
			}
			if had {
				if live {
					back, _ = json.Marshal(own)
				}
				if err := q.R.DropReservation(ctx, id); err != nil {
					return err
				}
			}
			if err := q.R.PutReservation(ctx, id, body); err != nil {
				return err
			}
			wrote = true
			return nil
		})
		if err != nil {
			return nothing, err
		}
		switch {
		case held && !wrote:
			return nothing, nil
		case held:
			q.keep(id)
			return func(published bool) {
				ctx := context.WithoutCancel(ctx)
				if published {
					q.Drop(ctx, id)
					return
				}
				q.mu.Lock()
				defer q.mu.Unlock()
				if !wasHeld {
					q.forget(id)
				}
				q.underLock(ctx, q.wait(), func(count) error {
					if err := q.R.DropReservation(ctx, id); err != nil || back == nil {
						return err
					}
					return q.R.PutReservation(ctx, id, back)
				})
			}, nil
		}
		// The lock was taken over while this was written (see Admit): undone, and done again.
		if wrote {
			if err := q.R.DropReservation(ctx, id); err != nil {
				return nothing, err
			}
		}
	}
}

// holds reports whether this process renews the reservation id.
func (q *Quota) holds(id string) bool {
	q.hmu.Lock()
	defer q.hmu.Unlock()
	return q.held[id]
}

// keep renews the reservation id of this process while it holds it: a long upload (of a large
// file, or over a slow link) outlives ReserveLease, after which another host's check takes its
// reservation for one whose holder died, and drops it. Every quarter of the lease (or of
// ReserveMaxAge, if shorter), one goroutine per Quota rewrites, under the limits lock, each
// reservation it holds that is still there and still names this process, as it is but for its
// Holder's Since, which is now. One no longer there (published and dropped by a check, or
// dropped by another) is forgotten.
func (q *Quota) keep(id string) {
	q.hmu.Lock()
	defer q.hmu.Unlock()
	if q.held == nil {
		q.held = map[string]bool{}
	}
	q.held[id] = true
	if !q.renewing {
		q.renewing = true
		go q.renew(min(ReserveLease, ReserveMaxAge) / 4)
	}
}

// forget stops renewing the reservation id: it is done with (and dropped after).
func (q *Quota) forget(id string) {
	q.hmu.Lock()
	defer q.hmu.Unlock()
	delete(q.held, id)
}

// renew renews the reservations held, every every, until there are none.
func (q *Quota) renew(every time.Duration) {
	ctx := context.Background()
	for {
		time.Sleep(every)
		q.hmu.Lock()
		ids := make([]string, 0, len(q.held))
		for id := range q.held {
			ids = append(ids, id)
		}
		q.renewing = len(ids) > 0
		q.hmu.Unlock()
		if len(ids) == 0 {
			return
		}
		lk, err := q.R.LockLimits(ctx, q.wait())
		if err != nil {
			continue // tried again at the next
		}
		raw, err := q.R.Reservations(ctx)
		for _, id := range ids {
			if err == nil && !q.renewOne(ctx, id, raw[id]) {
				q.forget(id) // published and dropped by a check, or dropped by another
			}
		}
		lk.Unlock(ctx)
	}
}

// renewOne rewrites the reservation id, read as b, with this process as its holder from now:
// false when it is not one this process holds (any more). It holds hmu throughout, so that a
// reservation done with meanwhile (forgotten, then dropped) is not written again.
func (q *Quota) renewOne(ctx context.Context, id string, b []byte) bool {
	q.hmu.Lock()
	defer q.hmu.Unlock()
	if !q.held[id] {
		return true
	}
	var r Reservation
	if b == nil || json.Unmarshal(b, &r) != nil || r.ID != id {
		return false
	}
	me := Me()
	if h, ok := ParseHolder(r.Holder); !ok || h.PID != me.PID || h.Host != ThisHost() {
		return false
	}
	r.Holder = me.String()
	b, _ = json.Marshal(r)
	if q.R.DropReservation(ctx, id) == nil {
		q.R.PutReservation(ctx, id, b)
	}
	return true
}

// count is what one check under the limits lock reads: the reservations, whether each holder
// was alive when they were read, and the listing, read after both.
type count struct {
	q    *Quota
	rs   map[string]Reservation
	live map[string]bool // by key (a reservation's id when it is one)
	ls   *Listing
}

// usage is the store's usage leaving out the upload except (and its reservation), and the
// reservations done with.
func (c count) usage(except string) (Usage, []string) {
	rs, ls := c.rs, c.ls
	if except != "" {
		rs = map[string]Reservation{}
		for k, r := range c.rs {
			if k != except {
				rs[k] = r
			}
		}
		ls = &Listing{}
		for _, e := range c.ls.Entries {
			if e.ID != except {
				ls.Entries = append(ls.Entries, e)
			}
		}
	}
	return UsageWith(ls, rs, func(r Reservation) bool { return c.live[r.ID] })
}

func (c count) drop(ctx context.Context, keys []string) error {
	for _, key := range keys {
		if err := c.q.R.DropReservation(ctx, key); err != nil {
			return err
		}
	}
	return nil
}

// pidGone is PIDGone; tests end holders at chosen moments.
var pidGone = PIDGone

// underLock runs f under the limits lock with what the store holds; held is false when the lock
// was lost meanwhile (what f wrote is then to be undone).
//
// The holders are asked whether they live right after the reservations are read, before the
// listing: an upload published and its process ended during the listing may be missing from it
// (a listing is no snapshot: S3 lists keys in pages and versitygw walks folders, so an upload
// that moves from unfinished to finished behind the walk is in neither place), and its
// reservation, read while its holder ran, must then count it. A holder that was gone before the
// listing began published (or left its unfinished upload) before, and the listing shows that.
func (q *Quota) underLock(ctx context.Context, wait time.Duration, f func(count) error) (held bool, err error) {
	lk, err := q.R.LockLimits(ctx, wait)
	if err != nil {
		return false, err
	}
	defer func() {
		h, uerr := lk.Unlock(context.WithoutCancel(ctx))
		held = h
		if err == nil {
			err = uerr
		}
	}()
	raw, err := q.R.Reservations(ctx)
	if err != nil {
		return false, err
	}
	c := count{q: q, rs: map[string]Reservation{}, live: map[string]bool{}}
	now, host := time.Now(), ThisHost()
	for key, b := range raw {
		var r Reservation
		json.Unmarshal(b, &r) // unreadable: dropped as not live
		c.rs[key] = r
		c.live[key] = r.ID == key && r.Live(now, host, pidGone)
	}
	if c.ls, err = q.List(ctx); err != nil {
		return false, err
	}
	return false, f(c)
}

// ThisHost is this host as a Holder names it.
func ThisHost() string {
	host, _ := os.Hostname()
	return strings.Join(strings.Fields(host), "_")
}
