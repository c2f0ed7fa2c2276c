//go:build unix

package local

import "sync"

// partialIndex holds the store's unfinished uploads by source, read once per Store: the upload
// stage looks a source up here instead of listing every partial (and reading each one's
// info.json) for every file. The partials this Store makes are added as they are made (a run that
// fails keeps them for the next, in the same process too); one another process makes after the
// listing is not in it: the stage then makes its own.
type partialIndex struct {
	mu       sync.Mutex
	built    bool
	bySource map[sourceName][]string
}

type sourceName struct{ path, name string }

// partialsOf returns the ids of the unfinished file uploads of the source abs under name that
// were there when the store's partials were first listed, or made since by this Store (some may
// be finished or gone by now: the caller's lock tells).
func (s *localStore) partialsOf(abs, name string) ([]string, error) {
	x := &s.parts
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.built {
		ids, err := s.partialIDs()
		if err != nil {
			return nil, err
		}
		x.bySource = map[sourceName][]string{}
		var batches []string
		for _, id := range ids {
			meta, err := s.readPartialMetaOf(id)
			if err == nil && meta.Batch {
				batches = append(batches, id)
			}
			if err != nil || !meta.of().Streamed {
				continue
			}
			k := sourceName{meta.Source.Path, meta.Name}
			x.bySource[k] = append(x.bySource[k], id)
		}
		x.built = true
		s.dropDeadBatches(batches)
	}
	return x.bySource[sourceName{abs, name}], nil
}

// notePartial adds the partial id, just made for the source abs under name, to the index.
func (s *localStore) notePartial(abs, name, id string) {
	x := &s.parts
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.built {
		k := sourceName{abs, name}
		x.bySource[k] = append(x.bySource[k], id)
	}
}
