//go:build unix

package local

import "github.com/attachctl/attachctl/ops/store"

// partialsOf returns the ids of the unfinished file uploads of the source abs under name that the
// store's index by source holds (store.PartialIndex): the upload stage's candidates to resume.
func (s *localStore) partialsOf(abs, name string) ([]string, error) {
	return s.parts.Of(s, abs, name)
}

// notePartial adds the partial id, just made for the source abs under name, to the index.
func (s *localStore) notePartial(abs, name, id string) { s.parts.Note(abs, name, id) }

// PartialIDs and PartialOf are store.PartialLister's: the partials folder, and each partial's
// info.json.
func (s *localStore) PartialIDs() ([]string, error) { return s.partialIDs() }

func (s *localStore) PartialOf(id string) (store.PartialOf, bool, error) {
	m, err := s.readPartialMetaOf(id)
	if err != nil {
		return store.PartialOf{}, false, err
	}
	return m.of(), m.Batch, nil
}
