//go:build unix

package ops

import (
	"errors"
	"os"
	"sort"

	"github.com/attachctl/attachctl/manifest"
	"golang.org/x/sys/unix"
)

// Uploads returns every upload of the store, finished and unfinished, sorted by id (which is the
// order they were begun in). It reads without the lock: a listing, not a judgement, so an upload
// finished or removed while it runs may show either way. An unfinished upload that is also
// finished (what a crash right after a finish leaves) shows once, finished.
func (s *Store) Uploads() ([]Listed, error) {
	if _, err := os.Lstat(s.Dir); errors.Is(err, os.ErrNotExist) {
		return nil, nil // a store not made yet is empty
	}
	ids, err := s.IDs()
	if err != nil {
		return nil, err
	}
	var out []Listed
	finished := map[string]bool{}
	for _, id := range ids {
		meta, used, _, err := s.UploadState(id)
		if err != nil {
			out = append(out, Listed{ID: id, Finished: true, Path: s.UploadDir(id), Err: err})
			continue
		}
		finished[id] = true
		out = append(out, Listed{ID: id, Name: meta.Name, Size: meta.Size, Blake3: meta.Blake3, Made: meta.Made,
			LastUsed: used, Finished: true, Path: s.FinishedPath(id, meta.Name)})
	}
	partials, err := s.partialIDs()
	if err != nil {
		return nil, err
	}
	for _, id := range partials {
		if finished[id] {
			continue
		}
		l, err := s.listPartial(id)
		if errors.Is(err, os.ErrNotExist) {
			continue // finished or aborted since it was listed
		}
		if err != nil {
			l = Listed{ID: id, Path: s.partialDir(id), Err: manifest.Errorf(manifest.UploadUnreadable, "upload %s: %v", id, err)}
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// listPartial reads an unfinished upload's name and begin time, and its data's size and mtime
// (out/<name> while a finish is moving it), reaching each through the guarded opens.
func (s *Store) listPartial(id string) (Listed, error) {
	parts, err := s.openPartials(false)
	if err != nil {
		if manifest.CodeOf(err) == manifest.UploadMissing {
			return Listed{}, os.ErrNotExist
		}
		return Listed{}, err
	}
	defer parts.Close()
	e, err := judgePartialAt(int(parts.Fd()), id, false)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return Listed{}, os.ErrNotExist
		}
		return Listed{}, err
	}
	if e.Name == "" {
		return Listed{}, errors.New(partialInfo + ": unreadable")
	}
	return Listed{ID: id, Name: e.Name, Size: e.Size, Made: e.Made, LastUsed: e.LastUsed,
		Path: s.partialDir(id) + "/" + partialData}, nil
}
