//go:build unix

package local

import "github.com/attachctl/attachctl/ops/store"

// PartialIDs and PartialOf are store.PartialLister's: the partials folder, and each partial's
// info.json.
func (s *localStore) PartialIDs() ([]string, error) { return s.partialIDs() }

func (s *localStore) PartialOf(id string) (store.PartialOf, bool, error) {
	m, err := s.readPartialMetaOf(id)
	if err != nil {
		return store.PartialOf{}, false, err
	}
	return m.Of(), m.Batch, nil
}
