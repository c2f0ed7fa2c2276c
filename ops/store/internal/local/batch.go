//go:build unix

package local

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"

	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// batchMax is how many uploads built in partials of their own a Batch holds before it commits
// them: each holds its partial's lock and two descriptors until then. A small upload built in the
// staging partial (batch_small.go) where syncfs commits holds none, and counts an eighth:
// batchFull is the weight at which a batch commits on its own.
const (
	batchMax  = 64
	batchFull = 8 * batchMax
)

// weight is what o counts towards batchFull.
func (o *out) weight() int {
	if o.p == nil && !fileSyncEach {
		return 1
	}
	return batchFull / batchMax
}

// syncWidth is how many uploads of a commit are fsynced at once (each is three fsyncs).
const syncWidth = 8

// A groupBatch publishes many uploads together (docs/store.md: uploads committed in batches). An
// upload streamed with it (Stream, opts.Batch) is copied, hashed and built, its finished folder
// ready inside its own partial (which stays locked) or the batch's staging partial, but not made
// durable or placed; a commit makes the built uploads durable at once, renames each into place
// and fsyncs the store once: the fsyncs that arrive together share journal commits, and the
// writeback of each file's data was started when it was built. Nothing is renamed into place
// before its data, metadata and folder are durable, so a crash at any point leaves partials that
// resume, or finished uploads, never a half-written one.
//
// A groupBatch is safe for concurrent use by the workers of one stage. A commit happens when Commit
// is called, when Settle asks for an upload the batch holds (a stage that streams its records
// settles each before handing it on), and on its own when the batch is full (batchFull).
type groupBatch struct {
	s        *localStore
	mu       sync.Mutex
	done     *sync.Cond          // on mu: an upload was built or dropped, or a commit ended
	ups      map[string]*batchUp // every upload id the batch claimed, by id
	byKey    map[string]string   // blake3 and name to id, of every upload the batch took
	pending  []*out              // built, not yet taken by a commit
	index    *stagedIndex        // the metadata of the staged uploads of pending (metaindex.go)
	files    int64               // the metadata files made, for their names
	inflight int                 // uploads taken by commits that have not ended
	// More, when set, tells Settle that more uploads are on their way into the batch (the
	// stage's other workers are taking records): Settle then waits for them, up to batchMax, and
	// one commit makes them all durable. It is asked under the batch's lock; Wake is to be
	// called when its answer turns false other than by an upload reaching the batch.
	More   func() bool
	active int // UploadRecord calls on the batch now running
	weight int // of pending

	stageMu sync.Mutex
	stage   *partial // the staging partial of small uploads (batch_small.go), made at the first

	// commitMu makes the batch's commits one at a time: a full batch committing on its own
	// (add) and the next one, or a Settle's, would otherwise each make the file system durable
	// for the same bytes.
	commitMu sync.Mutex
}

// batchUp is an upload id the batch claimed: busy from claim until it is dropped or its commit
// ends (while pending too), then with its error.
type batchUp struct {
	busy     bool
	err      error
	reported bool // err was returned by Settle or Commit, or is the claiming record's own
}

// enter and leave bracket an UploadRecord on the batch, waking a Settle that waits for it.
func (b *groupBatch) enter() {
	b.mu.Lock()
	b.active++
	b.mu.Unlock()
}

func (b *groupBatch) leave() {
	b.mu.Lock()
	b.active--
	b.done.Broadcast()
	b.mu.Unlock()
}

// SetMore is store.Batch's: Settle waits for the uploads more says are coming.
func (b *groupBatch) SetMore(more func() bool) {
	b.mu.Lock()
	b.More = more
	b.mu.Unlock()
}

// Wake makes a waiting Settle ask More again.
func (b *groupBatch) Wake() {
	b.mu.Lock()
	b.done.Broadcast()
	b.mu.Unlock()
}

// newBatch starts a batch of uploads into s.
func (s *localStore) newBatch() *groupBatch {
	b := &groupBatch{s: s, ups: map[string]*batchUp{}, byKey: map[string]string{}}
	b.done = sync.NewCond(&b.mu)
	return b
}

// take hands every pending upload, and the metadata file of the staged ones, to a commit; b.mu
// is held.
func (b *groupBatch) take() ([]*out, *stagedIndex) {
	outs, index := b.pending, b.index
	b.pending, b.weight, b.index = nil, 0, nil
	b.inflight += len(outs)
	return outs, index
}

// claim makes id the batch's upload of this BLAKE3 and name, unless one is already: then it
// returns that one's id (and the caller names it instead of building its own copy). Checking and
// claiming at once is what keeps two workers that copied the same file at the same time from
// building two uploads of it. A claimed id is building until add or drop; Settle waits for it.
func (b *groupBatch) claim(blake3, name, id string) string {
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

// drop gives up the claimed upload id, which could not be built: records that named it meanwhile
// get err from Settle (its own record has it already, so Commit does not return it again), and
// later records of the same file build their own.
func (b *groupBatch) drop(blake3, name, id string, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.byKey, blake3+"\x00"+name)
	b.ups[id] = &batchUp{err: err, reported: true}
	b.done.Broadcast()
}

// add takes the built upload of a claimed id; its partial is the batch's to close from now on.
// A staged upload's metadata line is written into the batch's pending metadata file first, in
// the same hold of b.mu as it joins pending, so that the file a commit takes holds the lines of
// the uploads it takes and no other. When the line cannot be written (a full disk) the upload is
// not taken, and the caller takes it apart.
func (b *groupBatch) add(o *out) error {
	if o.p != nil {
		// Start writing the data to disk now, without waiting: Commit's fsync then finds it done.
		startWriteback(int(o.p.f.Fd()), 0, 0)
	}
	b.mu.Lock()
	if o.p == nil {
		if err := b.addLine(o); err != nil {
			b.mu.Unlock()
			return err
		}
	}
	b.pending = append(b.pending, o)
	b.weight += o.weight()
	b.done.Broadcast() // a Settle may be waiting for it to be built
	var full []*out
	var index *stagedIndex
	if b.weight >= batchFull {
		full, index = b.take()
	}
	b.mu.Unlock()
	if full != nil {
		// Committed on a goroutine of its own, so that the worker goes on building the next
		// batch meanwhile (the stage's window holds two): a commit's syncfs waits on the disk and
		// its renames are one after another, time in which the builds of the next batch (their
		// folder and file made, the bytes written) take the cores. The uploads it takes are in
		// flight until it ends: Settle and Commit wait for them.
		go b.commit(full, index)
	}
	return nil
}

// addLine writes the staged upload o's metadata line into b.index, made at the first staged
// upload after a take; b.mu is held.
func (b *groupBatch) addLine(o *out) error {
	if b.index == nil {
		b.files++
		x, err := newStagedIndex(o.stage, metaFileName(o.stage.id, b.files))
		if err != nil {
			return err
		}
		b.index = x
	}
	if err := b.index.add(o.m); err != nil {
		if b.index.size == 0 { // left empty in the staging partial, which goes with the batch
			unix.Close(b.index.fd)
			b.index = nil
		}
		return err
	}
	return nil
}

// Settle makes sure the upload id is committed, committing everything the batch holds now if id
// is among it, and returns the error that upload's build or commit met (nil: finished, or never
// in the batch). A stage that streams its records calls it before handing each on, so that no
// record names an upload that is not finished yet; the uploads built meanwhile go in the same
// commit. An upload another worker is still building, or committing, is waited for.
func (b *groupBatch) Settle(id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		u := b.ups[id]
		switch {
		case u == nil:
			return nil
		case slices.ContainsFunc(b.pending, func(o *out) bool { return o.id == id }):
			// Committed with whatever else is built by then, once no other upload is on its
			// way (none being made, and More says none will be: the stage's window is full, or
			// its input ended) or the batch is full.
			if b.weight < batchFull && (b.active > 0 || b.More != nil && b.More()) {
				b.done.Wait()
				continue
			}
			outs, index := b.take()
			b.mu.Unlock()
			b.commit(outs, index)
			b.mu.Lock()
		case u.busy:
			b.done.Wait()
		default:
			u.reported = true
			return u.err
		}
	}
}

// find is the id of an upload of this BLAKE3 and name that the batch claimed, built, committed
// or not; "" when none. A record of the same file later in the run names it too (its Settle then waits for
// the same commit and returns the same error), as it would name an upload finished earlier.
func (b *groupBatch) find(blake3, name string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.byKey[blake3+"\x00"+name]
}

// dropStaging removes the staging partial, once nothing is being built in it or waits in it.
func (b *groupBatch) dropStaging() {
	b.stageMu.Lock()
	defer b.stageMu.Unlock()
	if b.stage != nil {
		b.stage.remove(false)
		b.stage = nil
	}
}

// commit commits outs and index, taken by take, and keeps what failed, by upload id and for
// Commit.
func (b *groupBatch) commit(outs []*out, index *stagedIndex) {
	if len(outs) == 0 {
		return // index is nil: a metadata file is made for an upload that joins pending
	}
	b.commitMu.Lock()
	errs := commit(outs, index)
	b.commitMu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, o := range outs {
		*b.ups[o.id] = batchUp{err: errs[i]}
	}
	b.inflight -= len(outs)
	b.done.Broadcast()
}

// Commit publishes every upload the batch holds, and returns what failed since the batch began
// that neither Settle nor an earlier Commit has returned (each error with its code, naming its
// upload, in the order of the ids: the order the uploads were begun). An upload that failed is
// an unfinished upload again, as a crash would have left it, and the next run resumes it; the
// others are finished.
func (b *groupBatch) Commit() error {
	b.mu.Lock()
	outs, index := b.take()
	b.mu.Unlock()
	b.commit(outs, index)
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.inflight > 0 {
		b.done.Wait()
	}
	if b.active == 0 && len(b.pending) == 0 {
		b.dropStaging() // what is left in it failed, and was reported
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

// commit publishes the built uploads outs (publish is a commit of one): each made durable, then
// placed, then the store fsynced once. index is the metadata file of the staged ones among outs
// (nil when there are none), written as they were built: the commit writes no new byte, so a
// disk that filled since they were built fails none of them. It returns each one's error (nil:
// finished). Every partial is closed (unlocked), and every staged upload's file, at the end.
func commit(outs []*out, index *stagedIndex) []error {
	errs := make([]error, len(outs))
	defer func() {
		for _, o := range outs {
			o.release()
		}
	}()
	s := outs[0].s
	defer s.published(outs) // each is published now, or failed: its reservation is done with
	storefd, serr := s.openDir(lockErr, false)
	if serr != nil {
		if index != nil { // its file goes with the staging partial, as its staged uploads do
			unix.Close(index.fd)
		}
		for i, o := range outs {
			errs[i] = o.undo(serr)
		}
		return errs
	}
	defer unix.Close(storefd)
	// The fsyncs of several uploads at once: a journaling file system commits together what
	// arrives while it commits. Where one call makes a whole file system durable (syncfs, Linux),
	// the batch is that one call however many uploads it holds; elsewhere each file is fsynced
	// and commitSync then flushes the drive once (macOS's fsync leaves the bytes in the drive's
	// cache).
	if fileSyncEach {
		store.ForEach(context.Background(), syncWidth, len(outs), func(i int) error {
			errs[i] = outs[i].sync()
			return nil // each upload fails alone
		})
	} else {
		for _, o := range outs {
			if o.mf != nil {
				o.mf.Close()
				o.mf = nil
			}
		}
	}
	// The metadata of the uploads built in the staging partial: one file for the commit, written
	// as they were built, made durable with them and placed before any of them is (metaindex.go).
	// Where every staged upload failed, the file names no upload of the store: the sweep prunes it.
	failStaged := func(err error) {
		for i, o := range outs {
			if o.p == nil && errs[i] == nil {
				errs[i] = err
			}
		}
	}
	if index != nil {
		if err := index.seal(); err != nil {
			failStaged(err)
			index = nil
		}
	}
	if err := commitSync(storefd); err != nil {
		for i := range errs {
			errs[i] = storeErr(s.Dir, err)
		}
	} else if index != nil {
		if err := s.publishIndex(index.st, index.name); err != nil {
			failStaged(err)
		}
	}
	for i, o := range outs {
		if errs[i] != nil {
			errs[i] = o.undo(errs[i])
		}
	}
	var placed []*out
	if s.beginPlace() {
		defer s.endPlace() // after done has indexed what was placed
	}
	for i, o := range outs {
		if errs[i] == nil {
			if errs[i] = o.place(storefd); errs[i] == nil {
				placed = append(placed, o)
			}
		}
	}
	if len(placed) > 0 {
		if err := dirDurable(storefd); err != nil {
			for i := range outs {
				if errs[i] == nil {
					errs[i] = storeErr(s.Dir, err) // placed; only their durability is in doubt
				}
			}
			return errs
		}
	}
	for _, o := range placed {
		o.done()
	}
	return errs
}

var _ store.Batch = (*groupBatch)(nil)
