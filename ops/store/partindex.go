package store

import "sync"

// PartialIndex is what a process knows of a store's unfinished file uploads by source (the path
// and name a stream was begun for: PartialOf), read once: the upload stage looks a source up here
// instead of listing every unfinished upload, and reading each one's info, for every file. The
// uploads this process begins are told to it (Note): a run that fails keeps them for the next, in
// the same process too. One another process begins after the listing is not in it, and the stage
// then begins its own. What it finds are candidates: some may be finished or gone by now, and the
// backend's lock tells. Its zero value is an empty index, safe for concurrent use; it is for a
// backend that keeps no source notes (the local store).
type PartialIndex struct {
	mu       sync.Mutex
	built    bool
	bySource map[partialSource][]string
}

type partialSource struct{ path, name string }

// PartialLister is the store's unfinished uploads as a PartialIndex reads them.
type PartialLister interface {
	// PartialIDs lists the ids of the unfinished uploads.
	PartialIDs() ([]string, error)
	// PartialOf reads what the unfinished upload id was begun for; batch: it is a batch's staging
	// partial. An upload it cannot read is left out.
	PartialOf(id string) (of PartialOf, batch bool, err error)
	// DropDeadBatches removes those of the staging partials ids that no process holds: what a run
	// killed before its commit left, never reported to anyone. It is called once the index is
	// read.
	DropDeadBatches(ids []string)
}

// Of returns the ids of the unfinished uploads begun by a stream of the source path under name
// that were there when src was first listed, or were begun since by this process (Note). The first
// call lists src, and drops the dead batches it finds.
func (x *PartialIndex) Of(src PartialLister, path, name string) ([]string, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.built {
		ids, err := src.PartialIDs()
		if err != nil {
			return nil, err
		}
		x.bySource = map[partialSource][]string{}
		var batches []string
		for _, id := range ids {
			of, batch, err := src.PartialOf(id)
			if err == nil && batch {
				batches = append(batches, id)
			}
			if err != nil || !of.Streamed {
				continue
			}
			k := partialSource{of.Path, of.Name}
			x.bySource[k] = append(x.bySource[k], id)
		}
		x.built = true
		src.DropDeadBatches(batches)
	}
	return x.bySource[partialSource{path, name}], nil
}

// Note adds the unfinished upload id, just begun by a stream of the source path under name.
func (x *PartialIndex) Note(path, name, id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.built {
		k := partialSource{path, name}
		x.bySource[k] = append(x.bySource[k], id)
	}
}
