package store

import (
	"sync"
	"time"
)

// FinishedIndex is what a process knows of a store's finished uploads by BLAKE3 and name: how a
// backend finds a source already uploaded (a finished upload of the same BLAKE3 and name) for
// the engine to name again instead of uploading it, where no source note names it (the local and
// in-memory stores). What it finds is a candidate only: the engines name it again when it is
// still intact (NameAgain, VerifyTreeOf), else ask again with it as avoid, which forgets it.
//
// It is read from the store (IndexSource) on a miss, only when the store changed since it was
// last listed, so that a stage of many new files does not list a growing store once per file;
// the uploads this process places are told to it (Add). Its zero value is an empty index, safe
// for concurrent use; the source is given to each call that may read the store, and is asked
// with the index's lock held. A nil source reads nothing: the index of a store that only this
// process changes knows it whole from what it was told.
type FinishedIndex struct {
	mu     sync.Mutex
	byKey  map[finishedKey]string
	seen   map[string]bool       // ids read or added (a miss reads only the others)
	bySize map[finishedSize]bool // name and size of every upload indexed
	// listedAt is when the store last changed as it was when last listed (zero: never, or the
	// source cannot tell).
	listedAt time.Time
	// placing counts the commits of this process placing uploads into a store that had not
	// changed since it was listed (BeginPlace): its changes meanwhile are theirs, and a miss lists
	// nothing for them. Each commit indexes what it placed (Add), and the store is taken as listed
	// once the last one ends. Without this, a batch committing while the next is built lists the
	// growing store again on nearly every miss (each upload placed changes it). What another
	// process places at the same time is not seen until the store changes again: the same race
	// as two runs uploading the same file at once, each making its own upload.
	placing int
}

// IndexSource is the store as a FinishedIndex reads it.
type IndexSource interface {
	// Changed is when the store's set of finished uploads last changed (the local store: its
	// folder's change time); zero when the backend cannot tell, and then every miss lists it.
	Changed() time.Time
	// IDs lists the store's upload ids in the order they were made: of two uploads of the same
	// BLAKE3 and name, the one listed last is found.
	IDs() ([]string, error)
	// ReadMeta reads the metadata of the finished upload id. An error (not finished yet, or
	// damaged) leaves the id to be read again on the next miss.
	ReadMeta(id string) (*Info, error)
}

type finishedKey struct{ blake3, name string }

type finishedSize struct {
	name string
	size int64
}

// Add indexes m, an upload this process has just placed in the store.
func (x *FinishedIndex) Add(m *Info) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.put(m)
}

// put indexes m; x.mu is held. The maps are made at the first put (reading or deleting from a
// nil map is fine).
func (x *FinishedIndex) put(m *Info) {
	if x.byKey == nil {
		x.byKey, x.seen, x.bySize = map[finishedKey]string{}, map[string]bool{}, map[finishedSize]bool{}
	}
	x.seen[m.ID] = true
	x.byKey[finishedKey{m.Blake3, m.Name}] = m.ID
	x.bySize[finishedSize{m.Name, m.Size}] = true
}

// readNew reads the uploads of src the index has not seen, unless the store has not changed
// since it was last listed, or changes only by this process's own commits (BeginPlace); x.mu is
// held.
func (x *FinishedIndex) readNew(src IndexSource) {
	if src == nil || x.placing > 0 {
		return
	}
	at := src.Changed()
	if !at.IsZero() && at.Equal(x.listedAt) {
		return // no upload placed or removed since the last listing
	}
	x.listedAt = at // taken before the listing: a change during it lists again
	ids, err := src.IDs()
	if err != nil {
		x.listedAt = time.Time{}
		return
	}
	for _, id := range ids {
		if x.seen[id] {
			continue
		}
		if m, err := src.ReadMeta(id); err == nil {
			x.put(m)
		}
	}
}

// MayHave reports whether a finished upload of this name and size may be in the store: the
// engine then hashes a source whose BLAKE3 it does not know before it copies anything, and
// otherwise copies it in one read (no finished upload has these bytes: just looked).
func (x *FinishedIndex) MayHave(src IndexSource, name string, size int64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	k := finishedSize{name, size}
	if !x.bySize[k] {
		x.readNew(src)
	}
	return x.bySize[k]
}

// Find returns the id of a finished upload of blake3 and name, or "" (none, or blake3 ""). avoid
// ("": none) is one the engine refused (swept or damaged since, another tree, a file upload of
// the tree's name): it is forgotten first, and never returned.
func (x *FinishedIndex) Find(src IndexSource, blake3, name, avoid string) string {
	if blake3 == "" {
		return ""
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if avoid != "" {
		x.forget(blake3, name, avoid)
	}
	k := finishedKey{blake3, name}
	id, ok := x.byKey[k]
	if !ok {
		x.readNew(src)
		id = x.byKey[k]
	}
	if id == avoid {
		return "" // read again (not removed, only refused): it stays refused
	}
	return id
}

// Forget drops the upload id of blake3 and name (swept or damaged since): the source is uploaded
// again, and a later listing reads the id again.
func (x *FinishedIndex) Forget(blake3, name, id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.forget(blake3, name, id)
}

func (x *FinishedIndex) forget(blake3, name, id string) {
	if k := (finishedKey{blake3, name}); x.byKey[k] == id {
		delete(x.byKey, k)
	}
	delete(x.seen, id)
}

// BeginPlace is called by a commit before it places uploads in the store. When the store has not
// changed since it was listed (or another commit of this process is placing), the changes until
// EndPlace are this process's own and no miss lists the store for them; it then returns true,
// and EndPlace is to be called once the commit's uploads are indexed (Add).
func (x *FinishedIndex) BeginPlace(src IndexSource) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.placing == 0 {
		if at := src.Changed(); x.listedAt.IsZero() || !at.Equal(x.listedAt) {
			return false
		}
	}
	x.placing++
	return true
}

// EndPlace ends what BeginPlace began: once no commit is placing, the store as it is now is
// taken as listed.
func (x *FinishedIndex) EndPlace(src IndexSource) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.placing--; x.placing > 0 {
		return
	}
	x.listedAt = src.Changed()
}
