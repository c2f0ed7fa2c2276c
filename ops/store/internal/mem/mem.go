// Package mem is a store kept in memory (restic's mem backend): a store.Backend with the same
// rules as the local and S3 stores, for the tests of what sits above the seam (sweep, resolve,
// the stages) where they test that logic and not where bytes are kept. It passes the conformance
// suite (ops/store/storetest).
//
// It lives under the module's internal/ so that the tests of any package of the module may use
// it and no embedder can. Besides the Backend it offers hooks a test needs to make a store that
// a real one reaches only with time or other processes: a clock (Now), a writer at work on an
// unfinished upload (Hold), something in the store that is not an upload (Plant), and bytes
// changed behind the store's back (EditFile, EditTreeFile).
package mem

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/zeebo/blake3"
)

// DefaultChunk is the chunk a Stream sends at once when none is given.
const DefaultChunk = 512 << 10

// Store is one store in memory. Make it with New.
type Store struct {
	loc string

	// Now is the store's clock: when an upload is begun, written and finished. A test sets it
	// before it makes uploads to give them an age; nil is time.Now.
	Now func() time.Time

	mu       sync.Mutex
	mark     []byte          // the store's mark (store.Marker): nil until the location is made a store
	foreign  map[string]bool // what else is at the location (Plant), by path inside it
	partials map[string]*partial
	finished map[string]*finished
	notes    map[string]string   // the upload stage's source notes: which unfinished upload a source is
	idx      store.FinishedIndex // finished uploads by BLAKE3 and name, told of each as it is published
	objects  store.MapObjects    // its small objects: the reservations of store.Quota

	sweepLock  chan struct{} // held by the one sweep that runs
	limitsLock chan struct{} // held while one upload is admitted against the limits
	quota      *store.Quota

	store.TreesOn // store.Trees: the engine's rules over a view of the store for each call (trees)
}

// partial is an unfinished upload.
type partial struct {
	name          string
	size          int64 // declared; -1: open
	made, written time.Time
	data          []byte
	note          string            // written by the upload stage: the source note naming it
	folder        bool              // a folder upload under way
	files         map[string][]byte // a folder upload's files stored so far, by path
	holds         int               // writers at work on it (Busy)
}

func (p *partial) bytes() int64 {
	if !p.folder {
		return int64(len(p.data))
	}
	var n int64
	for _, d := range p.files {
		n += int64(len(d))
	}
	return n
}

// finished is a finished upload.
type finished struct {
	info    store.Info
	used    time.Time
	foreign bool              // its marker is not the store's (PlantForeignMarker): named
	data    []byte            // a file upload's bytes
	tree    []store.TreeFile  // a folder upload's listing (nil for a file upload)
	files   map[string][]byte // a folder upload's files as stored, by path
	meta    []byte            // a folder upload's metadata (store.MetaName), as published
	listing []byte            // and its listing (store.TreeListName)
}

func (f *finished) folder() bool { return f.tree != nil }

// New is an empty store at location loc (say mem://chat-1): nothing is there until an upload or
// store init makes it.
func New(loc string) *Store {
	s := &Store{loc: loc, foreign: map[string]bool{}, partials: map[string]*partial{}, finished: map[string]*finished{},
		notes:     map[string]string{},
		sweepLock: make(chan struct{}, 1), limitsLock: make(chan struct{}, 1)}
	s.quota = &store.Quota{R: store.ObjectReserver{O: &s.objects, Loc: loc, Lock: s.lockLimits}, M: marker{s}, Loc: loc, List: s.List}
	s.TreesOn = func(context.Context, bool) (store.TreeBackend, error) { return &trees{s: s}, nil }
	return s
}

var _ store.Backend = (*Store)(nil)

// Features: the in-memory store names its uploads by URI, as S3 does.
func (s *Store) Features() store.Features {
	return store.Features{Namer: s, Exister: s, Limiter: s.quota, Trees: s, Streamer: s, Batcher: s}
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// Location names the store.
func (s *Store) Location() string { return s.loc }

// FinishedURI names a finished upload in records: LOCATION/<id>/<name>.
func (s *Store) FinishedURI(id, name string) string { return s.loc + "/" + id + "/" + name }

// checkStore refuses a location that holds something and is not a store, and marks the location
// a store when create (store.OpenSite over site). Called with s.mu held.
func (s *Store) checkStore(create bool) error {
	if s.mark != nil {
		return nil
	}
	_, err := store.OpenSite(s.loc, site{s}, create)
	return err
}

// site is the location's steps of store.OpenSite: what was planted is what is there, and no
// location is made or nested.
type site struct{ s *Store }

func (site) Nested() error { return nil }
func (site) Make() error   { return nil }
func (t site) Mark() error { t.s.mark = store.MarkText(store.Limits{}); return nil }
func (t site) Look() (store.Seen, error) {
	return store.Seen{Names: topEntries(t.s.top(map[string]bool{}))}, nil
}

// top adds to dirs the names at the top of what was planted (true: a folder, a planted path's
// first part), and returns it.
func (s *Store) top(dirs map[string]bool) map[string]bool {
	for p := range s.foreign {
		name, _, dir := strings.Cut(p, "/")
		dirs[name] = dirs[name] || dir
	}
	return dirs
}

func (s *Store) missing(id string) error {
	return fault.Errorf(fault.UploadMissing, "upload %s: not in store %s", id, s.loc)
}

// Exists reports whether anything is at the store's location (store.Exister).
func (s *Store) Exists(ctx context.Context) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mark != nil || len(s.foreign) > 0, nil
}

// Begin starts an unfinished upload.
func (s *Store) Begin(ctx context.Context, name string, size int64) (string, error) {
	if err := store.CheckBegin(name, size); err != nil {
		return "", err
	}
	s.mu.Lock()
	err := s.checkStore(true)
	s.mu.Unlock()
	if err != nil {
		return "", err
	}
	id, release, err := s.quota.AdmitNew(ctx, name, size)
	if err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		release()
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.partials[id] = &partial{name: name, size: size, made: now, written: now}
	return id, nil
}

// Write appends what r holds to the unfinished upload id at offset, whole or not at all
// (store.WriteChunk).
func (s *Store) Write(ctx context.Context, id string, offset int64, r io.Reader) (int64, error) {
	return store.WriteChunk(ctx, s, id, offset, r)
}

// Status reports an upload, finished or not (store.StatusOf).
func (s *Store) Status(ctx context.Context, id string) (*store.Status, error) {
	return store.StatusOf(ctx, s, id)
}

// PartialStatus reads the unfinished upload id for Status (store.StatusBackend).
func (s *Store) PartialStatus(ctx context.Context, id string) (store.UnfinishedState, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.partials[id]
	if p == nil {
		return store.UnfinishedState{}, 0, s.missing(id)
	}
	return p.state(), p.size, nil
}

// Finish checks the unfinished upload id and publishes it, create-only (store.FinishChunks).
func (s *Store) Finish(ctx context.Context, id string, size int64, sum string) (*store.Info, error) {
	return store.FinishChunks(ctx, s, id, size, sum)
}

// publish makes the unfinished file upload p finished, with BLAKE3 sum, and drops its
// reservation. Called with s.mu held.
func (s *Store) publish(id string, p *partial, sum string) store.Info {
	f := &finished{info: store.Info{ID: id, Name: p.name, Size: int64(len(p.data)), Blake3: sum, Made: s.now()}, data: p.data}
	s.finished[id] = f
	s.idx.Add(&f.info)
	delete(s.partials, id)
	s.quota.R.DropReservation(context.Background(), id)
	return f.info
}

func hexSum(b []byte) string {
	h := blake3.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Abort removes the unfinished upload id (store.AbortChunks).
func (s *Store) Abort(ctx context.Context, id string) error {
	return store.AbortChunks(ctx, s, id)
}

// drop removes the unfinished upload id, its note and its reservation. Called with s.mu held.
func (s *Store) drop(id string, p *partial) {
	delete(s.partials, id)
	s.quota.R.DropReservation(context.Background(), id)
	if p.note != "" && s.notes[p.note] == id {
		delete(s.notes, p.note)
	}
}

// finishedOf is the finished upload id named name, for a reader. Called with s.mu held.
func (s *Store) finishedOf(id, name string) (*finished, error) {
	if err := s.checkStore(false); err != nil {
		return nil, err
	}
	f := s.finished[id]
	if f == nil || f.info.Name != name {
		return nil, s.missing(id)
	}
	return f, nil
}

// Open opens the finished upload id named name.
func (s *Store) Open(ctx context.Context, id, name string) (store.Reader, error) {
	if err := store.ValidID(id); err != nil {
		return nil, err
	}
	if err := store.ValidName(name); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.finishedOf(id, name)
	if err != nil {
		return nil, err
	}
	if f.folder() {
		return nil, store.FolderAsFile(id, name)
	}
	info := f.info
	return &reader{Reader: bytes.NewReader(f.data), info: &info}, nil
}

// reader is a finished upload open for reading: the bytes as they were when it was opened.
type reader struct {
	*bytes.Reader
	info *store.Info
}

func (r *reader) Info() *store.Info { return r.info }
func (r *reader) Close() error      { return nil }

// Info reads a finished upload's metadata.
func (s *Store) Info(ctx context.Context, id string) (*store.Info, error) {
	if err := store.ValidID(id); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkStore(false); err != nil {
		return nil, err
	}
	f := s.finished[id]
	if f == nil {
		return nil, s.missing(id)
	}
	info := f.info
	return &info, nil
}

// List returns every upload, in id order, and what else is in the store, the rules written once
// (store.ListOn) over the maps.
func (s *Store) List(ctx context.Context) (*store.Listing, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkStore(false); err != nil {
		return nil, err
	}
	return store.ListOn(ctx, memList{s})
}

// memList is the store as a store.ListBackend, read with s.mu held: the finished uploads and
// what was planted at the top (a planted path's first part), the unfinished ones as partials.
type memList struct{ s *Store }

func (l memList) ListProperties() store.ListProperties { return store.ListProperties{Jobs: 1} }

func (l memList) ListTop(context.Context) ([]store.TopEntry, string, bool, error) {
	dirs := map[string]bool{}
	for id := range l.s.finished {
		dirs[id] = true
	}
	return topEntries(l.s.top(dirs)), l.s.loc, true, nil
}

// topEntries are the names of dirs (true: a folder), sorted.
func topEntries(dirs map[string]bool) []store.TopEntry {
	ents := make([]store.TopEntry, 0, len(dirs))
	for name, dir := range dirs {
		ents = append(ents, store.TopEntry{Name: name, Dir: dir})
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name < ents[j].Name })
	return ents
}

func (l memList) ReadUpload(_ context.Context, c store.Candidate) (*store.UploadMeta, error) {
	f := l.s.finished[c.ID]
	if f == nil {
		return nil, fault.Errorf(fault.UploadUnreadable, "upload %s: no metadata", c.ID)
	}
	info := f.info
	return &store.UploadMeta{Info: &info, Recorded: c.ID, LastUsed: f.used, Folder: f.folder(), Files: len(f.tree), ForeignMarker: f.foreign}, nil
}

func (l memList) ListPartials(context.Context) ([]store.TopEntry, string, error) {
	ids := map[string]bool{}
	for id := range l.s.partials {
		ids[id] = true
	}
	return topEntries(ids), l.s.loc + "/partial", nil
}

func (l memList) ReadPartial(_ context.Context, id string) (store.UnfinishedState, error) {
	p := l.s.partials[id]
	if p == nil {
		return store.UnfinishedState{}, l.s.missing(id)
	}
	return p.state(), nil
}

func (p *partial) state() store.UnfinishedState {
	return store.UnfinishedState{Name: p.name, Bytes: p.bytes(), Made: p.made, Written: p.written, Busy: p.holds > 0}
}

// MarkUsed marks the finished uploads ids used at at, as the local store does (store.MarkUsedIn):
// the store's mutex is its hold, so nothing moves between the look-up and the mark.
func (s *Store) MarkUsed(ctx context.Context, ids []string, at time.Time) error {
	return store.MarkUsedIn(ctx, memUse{s}, s.loc, ids, at)
}

// memUse is the store's uploads as store.UseFolders; a finished upload is its own folder.
type memUse struct{ s *Store }

func (u memUse) HoldUses() (func(), error) {
	u.s.mu.Lock()
	if err := u.s.checkStore(false); err != nil {
		u.s.mu.Unlock()
		return nil, err
	}
	return u.s.mu.Unlock, nil
}

func (u memUse) OpenUse(id string) (store.UseDir, error) {
	if f := u.s.finished[id]; f != nil {
		return f, nil
	}
	return nil, store.NotFinished(id, u.s.loc)
}

// MarkUse and Close are store.UseDir's: the mutex is held.
func (f *finished) MarkUse(at time.Time) error {
	f.used, f.foreign = at.UTC(), false
	return nil
}

func (f *finished) Close() {}

// take takes the lock ch, waiting at most wait; busy is the store.locked error.
func take(ctx context.Context, ch chan struct{}, wait time.Duration, busy func() error) error {
	select {
	case ch <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return busy()
	}
}

// Sweep takes the store's one-sweep-at-a-time hold; a dry run takes nothing.
func (s *Store) Sweep(ctx context.Context, wait time.Duration, dryRun bool) (store.Sweeper, error) {
	s.mu.Lock()
	err := s.checkStore(false)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if dryRun {
		return &sweeper{s: s, dry: true}, nil
	}
	if err := take(ctx, s.sweepLock, wait, func() error {
		return fault.Errorf(fault.StoreLocked, "store %s: %s %s", s.loc, store.LockName("sweep"), store.HeldBy(store.Holder{}, false, wait))
	}); err != nil {
		return nil, err
	}
	return &sweeper{s: s}, nil
}

type sweeper struct {
	s      *Store
	dry    bool
	held   bool // inside Exclude: s.mu is held
	closed sync.Once
}

// Remove is the sweep's re-check written once (store.SweepRemove) over the maps.
func (sw *sweeper) Remove(ctx context.Context, cands []store.Entry, stale func(store.Entry) bool, each func(store.Entry, store.Outcome, error) error) error {
	return store.SweepRemove(ctx, sw, sw.dry, cands, stale, each)
}

// SweepProperties: one entry per hold of the store's lock, removed as it is set aside.
func (sw *sweeper) SweepProperties() store.SweepProperties {
	return store.SweepProperties{Batch: 1, Jobs: 1}
}

func (sw *sweeper) Exclude(context.Context) (func(), error) {
	sw.s.mu.Lock()
	sw.held = true
	return func() { sw.held = false; sw.s.mu.Unlock() }, nil
}

func (sw *sweeper) Recheck(_ context.Context, c store.Entry) (store.Reread, error) {
	s := sw.s
	if !sw.held { // a dry run
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	if f := s.finished[c.ID]; c.Finished && f != nil {
		return store.Reread{Used: f.used}, nil
	} else if p := s.partials[c.ID]; !c.Finished && p != nil {
		return store.Reread{State: p.state()}, nil
	}
	return store.Reread{}, store.NotUnfinished(c.ID, s.loc)
}

// Doom removes the entry at once, under the lock: there is no trash to empty.
func (sw *sweeper) Doom(_ context.Context, it *store.SweepItem) error {
	if it.Entry.Finished {
		delete(sw.s.finished, it.Entry.ID)
	} else {
		sw.s.drop(it.Entry.ID, sw.s.partials[it.Entry.ID])
	}
	return nil
}

func (sw *sweeper) Drop(context.Context, *store.SweepItem) error { return nil }
func (sw *sweeper) Restore(*store.SweepItem)                     {}

// DropLeftover: the maps keep nothing a killed run leaves (a finish drops its partial under the
// lock that publishes it).
func (sw *sweeper) DropLeftover(context.Context, store.Leftover) error { return nil }

func (sw *sweeper) Close() error {
	sw.closed.Do(func() {
		if !sw.dry {
			<-sw.s.sweepLock
		}
	})
	return nil
}

// noteKey is the upload stage's note of a source: which upload the same file (or folder), name,
// size and BLAKE3 is.
func noteKey(parts ...any) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%q", parts))
	return hex.EncodeToString(h[:])
}
