//go:build unix

package local

import (
	"context"
	"errors"
	"sync"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// PartialStatus reads the unfinished upload id for Status (store.StatusBackend) as the listing
// reads it (readPartial), checked as its writer checks it (ownPartial), and its declared size.
func (s *localStore) PartialStatus(_ context.Context, id string) (store.UnfinishedState, int64, error) {
	if err := s.open(false); err != nil {
		return store.UnfinishedState{}, 0, err
	}
	missing := fault.Errorf(fault.UploadMissing, "upload %s: no such upload in store %s", id, s.Dir)
	partfd, err := s.openDir(lockErr, false, InternalDir, partialDir)
	if fault.CodeOf(err) == fault.UploadMissing {
		return store.UnfinishedState{}, 0, missing
	} else if err != nil {
		return store.UnfinishedState{}, 0, err
	}
	defer unix.Close(partfd)
	r, err := s.readPartial(partfd, id, false, ownPartial(id))
	switch {
	case errors.Is(err, unix.ENOENT) || errors.Is(err, errGone): // no data file, or no info.json
		return r.UnfinishedState, 0, missing
	case err != nil:
		return r.UnfinishedState, 0, partialErr(id, r, err)
	}
	return r.UnfinishedState, r.meta.Size, nil
}

// uploadIndex maps blake3+name to the id of a finished upload, for the stage's dedupe. It is built
// once per Store value and refreshed on a miss by reading the metadata of ids not seen yet.
type uploadIndex struct {
	mu     sync.Mutex
	byKey  map[indexKey]string
	seen   map[string]bool
	bySize map[sizeKey]bool // name and size of every upload indexed
	// listedAt is the store folder's change time when it was last listed (zero: never): a miss
	// lists it again only when it changed since, so that a stage of many new files does not list
	// a growing store once per file.
	listedAt unix.Timespec
	// placing counts the commits of this process placing uploads into a store folder that had
	// not changed since it was listed (beginPlace): its changes meanwhile are theirs, and a miss
	// lists nothing for them. Each commit indexes what it placed (out.done), and the folder is
	// taken as listed once the last one ends. Without this, a batch committing while the next is
	// built lists the growing store again on nearly every miss (each rename changes the folder).
	// What another process places at the same time is not seen until the folder changes again:
	// the same race as two runs uploading the same file at once, each making its own upload.
	placing int
}

type sizeKey struct {
	name string
	size int64
}

type indexKey struct{ blake3, name string }

func (x *uploadIndex) add(m *Meta) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.put(m)
}

// put indexes m; x.mu is held. The maps are made at the first put (reading or deleting from a
// nil map is fine).
func (x *uploadIndex) put(m *Meta) {
	if x.byKey == nil {
		x.byKey, x.seen, x.bySize = map[indexKey]string{}, map[string]bool{}, map[sizeKey]bool{}
	}
	x.seen[m.ID] = true
	x.byKey[indexKey{m.Blake3, m.Name}] = m.ID
	x.bySize[sizeKey{m.Name, m.Size}] = true
}

// indexNew reads the metadata of the uploads the index has not seen yet; s.idx.mu is held.
func (s *localStore) indexNew() {
	if s.idx.placing > 0 {
		return // the folder changes by this process's own renames (beginPlace)
	}
	var st unix.Stat_t
	if err := unix.Lstat(s.Dir, &st); err == nil {
		if st.Ctim == s.idx.listedAt {
			return // no upload placed or removed since the last listing
		}
		s.idx.listedAt = st.Ctim // taken before the listing: a change during it lists again
	}
	ids, err := s.IDs() // in order: of two uploads of the same bytes and name, the newer is named
	if err != nil {
		s.idx.listedAt = unix.Timespec{}
		return
	}
	for _, i := range ids {
		if s.idx.seen[i] {
			continue
		}
		m, err := s.ReadMeta(i)
		if err != nil {
			continue // not finished yet, or damaged: looked at again on the next miss
		}
		s.idx.put(m)
	}
}

// beginPlace is called by a commit before it renames uploads into the store. When the store
// folder has not changed since it was listed (or another commit of this process is placing), the
// changes until endPlace are this process's own and no miss lists the folder for them; it then
// returns true, and endPlace is to be called once the commit's uploads are indexed.
func (s *localStore) beginPlace() bool {
	x := &s.idx
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.placing == 0 {
		var st unix.Stat_t
		if x.listedAt == (unix.Timespec{}) || unix.Lstat(s.Dir, &st) != nil || st.Ctim != x.listedAt {
			return false
		}
	}
	x.placing++
	return true
}

// endPlace ends what beginPlace began: once no commit is placing, the folder as it is now is
// taken as listed.
func (s *localStore) endPlace() {
	x := &s.idx
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.placing--; x.placing > 0 {
		return
	}
	var st unix.Stat_t
	if unix.Lstat(s.Dir, &st) != nil {
		x.listedAt = unix.Timespec{}
		return
	}
	x.listedAt = st.Ctim
}

// mayHave reports whether a finished upload of this name and size may be in s: the upload stage
// then hashes a source whose BLAKE3 it does not know before it copies anything.
func (s *localStore) mayHave(name string, size int64) bool {
	x := &s.idx
	x.mu.Lock()
	defer x.mu.Unlock()
	k := sizeKey{name, size}
	if !x.bySize[k] {
		s.indexNew()
	}
	return x.bySize[k]
}

// finished returns the id of a finished upload of blake3 and name in s as the index knows it, or
// "": store.StreamUpload reads it back before it names it again (forget, when it is not intact).
func (s *localStore) finished(blake3, name string) string {
	x := &s.idx
	x.mu.Lock()
	defer x.mu.Unlock()
	k := indexKey{blake3, name}
	id, ok := x.byKey[k]
	if !ok {
		s.indexNew()
		id = x.byKey[k]
	}
	return id
}

// forget drops the upload id of blake3 and name from the index: swept or damaged since, so the
// source is uploaded again.
func (s *localStore) forget(blake3, name, id string) {
	x := &s.idx
	x.mu.Lock()
	defer x.mu.Unlock()
	if k := (indexKey{blake3, name}); x.byKey[k] == id {
		delete(x.byKey, k)
	}
	delete(x.seen, id)
}
