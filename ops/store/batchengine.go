package store

import (
	"errors"
	"maps"
	"slices"
	"sync"

	"github.com/attachctl/attachctl/manifest/fault"
)

// The group commit (Batch), written once over a GroupCommitter: which uploads a backend publishes
// together, and when.
//
// What the engine decides: that an upload streamed into the batch is built but not published
// until a commit takes it; that a commit happens when Commit is called, when Settle asks for an
// upload the batch holds (a stage that streams its records settles each before handing it on),
// and on its own when the weight of what is built reaches the batch's full weight; that a Settle
// waits while more uploads are on their way (being streamed into the batch, or More says so), so
// that one commit takes them all; that commits are one at a time; that two workers that built the
// same BLAKE3 and name in one batch make one upload, and a build that fails gives its claim up
// (Build: Claim, Add, Drop; Find); and which errors Settle and Commit return, each once. What is the backend's: how an upload is built, what it weighs,
// what it keeps for the uploads of one commit (GroupCommitter.BatchJoin) and the commit itself.

// GroupCommitter is what a backend gives a GroupBatch: the mechanics of its built uploads. T is
// a built upload; G what the backend keeps for the uploads one commit takes (its zero value:
// nothing yet).
type GroupCommitter[T, G any] interface {
	// BatchItem is the upload id of the built upload t, and what it weighs towards the batch's
	// full weight.
	BatchItem(t T) (id string, weight int)
	// BatchJoin is called under the batch's lock as t joins the uploads the next commit takes,
	// with g what the backend keeps for them so far: what it adds to g goes to the same commit
	// as t and to no other. An error keeps t out of the batch.
	BatchJoin(g *G, t T) error
	// BatchCommit publishes ts with what was kept for them, g, and returns each one's error (nil:
	// finished). It is called with at least one upload, and never twice at once.
	BatchCommit(ts []T, g G) []error
	// BatchIdle is called under the batch's lock by Commit once nothing is built, being built or
	// being committed: what the backend keeps for the batch's builds can go.
	BatchIdle()
}

// GroupBuilder builds one upload for a GroupBatch (GroupBatch.Build).
type GroupBuilder[T any] interface {
	// BatchBuild builds the upload id of the bytes of BLAKE3 blake3, ready for a commit.
	BatchBuild(id, blake3 string) (T, error)
	// BatchUnbuild takes apart t, built and kept out of the batch (err: why).
	BatchUnbuild(t T, err error)
}

// A GroupBatch publishes many uploads together (docs/store.md: uploads committed in batches): a
// backend's Batch, safe for concurrent use by the workers of one stage. A worker streaming an
// upload into it brackets the stream with Enter and Leave, and builds the upload through Build
// (or claims its bytes, Claim, hands the built upload over, Add, or gives the claim up, Drop).
type GroupBatch[T, G any] struct {
	owner any // the store the batch is of: a stream into it from another is refused (StreamUpload)
	c     GroupCommitter[T, G]
	full  int // the weight at which the batch commits on its own

	mu       sync.Mutex
	done     *sync.Cond          // on mu: an upload was built or dropped, or a commit ended
	ups      map[string]*batchUp // every upload id the batch claimed, by id
	byKey    map[string]string   // blake3 and name to id, of every upload the batch claimed
	pending  []T                 // built, not yet taken by a commit
	group    G                   // what the backend keeps for pending (BatchJoin)
	weight   int                 // of pending
	inflight int                 // uploads taken by commits that have not ended
	active   int                 // streams into the batch now running (Enter, Leave)
	// more, when set, tells Settle that more uploads are on their way into the batch (the
	// stage's other workers are taking records): Settle then waits for them, up to the full
	// weight, and one commit makes them all durable. It is asked under mu; Wake is to be called
	// when its answer turns false other than by an upload reaching the batch.
	more func() bool

	// commitMu makes the batch's commits one at a time: a full batch committing on its own (Add)
	// and the next one, or a Settle's, would otherwise each make the same bytes durable.
	commitMu sync.Mutex

	// small builds the small sources streamed into the batch, admitted against smallQuota
	// (BuildsSmall, SmallWrite); nil: each source has an unfinished upload of its own.
	small      SmallBuilder[T]
	smallQuota *Quota
}

// batchUp is an upload id the batch claimed: busy from Claim until it is dropped or its commit
// ends (while pending too), then with its error.
type batchUp struct {
	busy     bool
	err      error
	reported bool // err was returned by Settle or Commit, or is the claiming stream's own
}

// NewGroupBatch starts a batch of the store owner (the StreamBackend its streams are given to)
// over c that commits on its own once what it holds built weighs full.
func NewGroupBatch[T, G any](owner any, c GroupCommitter[T, G], full int) *GroupBatch[T, G] {
	b := &GroupBatch[T, G]{owner: owner, c: c, full: full, ups: map[string]*batchUp{}, byKey: map[string]string{}}
	b.done = sync.NewCond(&b.mu)
	return b
}

// Enter and Leave bracket a stream into the batch: a Settle waits while one runs, for its upload
// to join the same commit.
func (b *GroupBatch[T, G]) Enter() {
	b.mu.Lock()
	b.active++
	b.mu.Unlock()
}

func (b *GroupBatch[T, G]) Leave() {
	b.mu.Lock()
	b.active--
	b.done.Broadcast()
	b.mu.Unlock()
}

// streamInto is a GroupBatch as a stream sees it (a backend's batch embeds one).
type streamInto interface {
	ownedBy() any
	Enter()
	Leave()
}

func (b *GroupBatch[T, G]) ownedBy() any { return b.owner }

// enterBatch brackets a stream of src into opts' batch, if any (Enter, then leave): a batch that
// is no GroupBatch of the store b is upload.invalid.
func enterBatch(b StreamBackend, src Source, batch Batch) (leave func(), err error) {
	if batch == nil {
		return func() {}, nil
	}
	in, ok := batch.(streamInto)
	if !ok || in.ownedBy() != any(b) {
		return nil, fault.Errorf(fault.UploadInvalid, "%s: the batch given is not one of this store", src.Path)
	}
	in.Enter()
	return in.Leave, nil
}

// SetMore is Batch's: Settle waits for the uploads more says are coming.
func (b *GroupBatch[T, G]) SetMore(more func() bool) {
	b.mu.Lock()
	b.more = more
	b.mu.Unlock()
}

// Wake makes a waiting Settle ask more again.
func (b *GroupBatch[T, G]) Wake() {
	b.mu.Lock()
	b.done.Broadcast()
	b.mu.Unlock()
}

// Claim makes id the batch's upload of this BLAKE3 and name, unless one is already: then it
// returns that one's id (and the caller names it instead of building its own copy). Checking and
// claiming at once is what keeps two workers that copied the same file at the same time from
// building two uploads of it. A claimed id is building until Add or Drop; Settle waits for it.
func (b *GroupBatch[T, G]) Claim(blake3, name, id string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	key := blake3 + "\x00" + name
	if had := b.byKey[key]; had != "" {
		return had
	}
	b.byKey[key] = id
	b.ups[id] = &batchUp{busy: true}
	return id
}

// Drop gives up the claimed upload id, which could not be built: streams that named it meanwhile
// get err from Settle (its own stream has it already, so Commit does not return it again), and
// later streams of the same file build their own.
func (b *GroupBatch[T, G]) Drop(blake3, name, id string, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.byKey, blake3+"\x00"+name)
	b.ups[id] = &batchUp{err: err, reported: true}
	b.done.Broadcast()
}

// Find is the id of an upload of this BLAKE3 and name that the batch claimed, built, committed or
// not; "" when none. A later stream of the same file names it too (its Settle then waits for the
// same commit and returns the same error), as it would name an upload finished earlier.
func (b *GroupBatch[T, G]) Find(blake3, name string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.byKey[blake3+"\x00"+name]
}

// Build is a stream's upload, as id, of the bytes of this BLAKE3 under name into the batch: when
// another worker of the batch claimed them (Claim), it builds nothing and returns that upload's
// id, which the stream names instead of its own copy; else it builds the upload, adds it and
// returns id. A build or an add that fails gives the claim up (Drop) with its error.
func (b *GroupBatch[T, G]) Build(blake3, name, id string, w GroupBuilder[T]) (string, error) {
	if had := b.Claim(blake3, name, id); had != id {
		return had, nil
	}
	t, err := w.BatchBuild(id, blake3)
	if err == nil {
		if err = b.Add(t); err != nil {
			w.BatchUnbuild(t, err)
		}
	}
	if err != nil {
		b.Drop(blake3, name, id, err)
		return "", err
	}
	return id, nil
}

// Add takes the built upload t of a claimed id: it is the batch's to commit from now on. When the
// backend keeps it out (BatchJoin's error) it is not taken, and the caller takes it apart and
// drops its claim.
func (b *GroupBatch[T, G]) Add(t T) error {
	b.mu.Lock()
	if err := b.c.BatchJoin(&b.group, t); err != nil {
		b.mu.Unlock()
		return err
	}
	_, w := b.c.BatchItem(t)
	b.pending = append(b.pending, t)
	b.weight += w
	b.done.Broadcast() // a Settle may be waiting for it to be built
	var full []T
	var group G
	if b.weight >= b.full {
		full, group = b.take()
	}
	b.mu.Unlock()
	if full != nil {
		// Committed on a goroutine of its own, so that the worker goes on building the next
		// batch meanwhile: a commit waits on the disk, time in which the builds of the next batch
		// take the cores. The uploads it takes are in flight until it ends: Settle and Commit
		// wait for them.
		go b.commit(full, group)
	}
	return nil
}

// take hands every pending upload, and what the backend keeps for them, to a commit; b.mu is
// held.
func (b *GroupBatch[T, G]) take() ([]T, G) {
	ts, group := b.pending, b.group
	var none G
	b.pending, b.weight, b.group = nil, 0, none
	b.inflight += len(ts)
	return ts, group
}

// commit commits ts and group, taken by take, and keeps what failed, by upload id and for Commit.
func (b *GroupBatch[T, G]) commit(ts []T, group G) {
	if len(ts) == 0 {
		return // group is empty: the backend keeps something for an upload that joins pending
	}
	b.commitMu.Lock()
	errs := b.c.BatchCommit(ts, group)
	b.commitMu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, t := range ts {
		id, _ := b.c.BatchItem(t)
		*b.ups[id] = batchUp{err: errs[i]}
	}
	b.inflight -= len(ts)
	b.done.Broadcast()
}

// Settle makes sure the upload id is committed, committing everything the batch holds now if id
// is among it, and returns the error that upload's build or commit met (nil: finished, or never
// in the batch). A stage that streams its records calls it before handing each on, so that no
// record names an upload that is not finished yet; the uploads built meanwhile go in the same
// commit. An upload another worker is still building, or committing, is waited for.
func (b *GroupBatch[T, G]) Settle(id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		u := b.ups[id]
		switch {
		case u == nil:
			return nil
		case !u.busy: // dropped, or its commit ended (a pending upload is busy)
			u.reported = true
			return u.err
		case slices.ContainsFunc(b.pending, func(t T) bool { got, _ := b.c.BatchItem(t); return got == id }):
			// Committed with whatever else is built by then, once no other upload is on its
			// way (none being streamed, and more says none will be: the stage's window is full,
			// or its input ended). A batch that fills meanwhile is committed by Add.
			if b.active > 0 || b.more != nil && b.more() {
				b.done.Wait()
				continue
			}
			ts, group := b.take()
			b.mu.Unlock()
			b.commit(ts, group)
			b.mu.Lock()
		default: // being built, or committed by another worker
			b.done.Wait()
		}
	}
}

// Commit publishes every upload the batch holds, and returns what failed since the batch began
// that neither Settle nor an earlier Commit has returned (each error with its code, naming its
// upload, in the order of the ids: the order the uploads were begun). An upload that failed is
// an unfinished upload again, as a crash would have left it, and the next run resumes it; the
// others are finished.
func (b *GroupBatch[T, G]) Commit() error {
	b.mu.Lock()
	ts, group := b.take()
	b.mu.Unlock()
	b.commit(ts, group)
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.inflight > 0 {
		b.done.Wait()
	}
	if b.active == 0 && len(b.pending) == 0 {
		b.c.BatchIdle() // what is left of the builds failed, and was reported
	}
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(b.ups)) {
		if u := b.ups[id]; u.err != nil && !u.reported {
			errs = append(errs, u.err)
			u.reported = true
		}
	}
	return errors.Join(errs...)
}

// Built is the uploads built and not yet taken by a commit: what a crash would leave unpublished.
func (b *GroupBatch[T, G]) Built() []T {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.pending)
}

// Quiet returns once no commit the batch started is running, committing nothing itself: the
// uploads of every full batch are then published, or failed.
func (b *GroupBatch[T, G]) Quiet() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.inflight > 0 {
		b.done.Wait()
	}
}

var _ Batch = (*GroupBatch[int, int])(nil)
