package ops

import (
	"errors"
	"os"
	"sort"
	"time"

	"github.com/attachctl/attachctl/manifest"
)

// Listed is one upload of the store, finished or not, as `attachctl ls` shows it.
type Listed struct {
	ID   string
	Name string
	// Size is a finished upload's size, or the bytes an unfinished one holds so far.
	Size int64
	// Blake3 is a finished upload's recorded hash; "" while unfinished.
	Blake3 string
	// Made is when a finished upload was finished, or when an unfinished one was begun.
	Made time.Time
	// LastUsed is when a finished upload was last used (zero: never), or when an unfinished one
	// was last written: the times a sweep compares with its cutoff.
	LastUsed time.Time
	Finished bool
	// Path is the file that holds the upload's bytes: the finished file, or the unfinished
	// upload's data so far.
	Path string
	// Err is why the upload could not be read (its Name and times are then unknown).
	Err error
}

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
// (out/<name> while a finish is moving it), following no link.
func (s *Store) listPartial(id string) (Listed, error) {
	dir := s.partialDir(id)
	meta, err := s.readPartialMetaOf(id)
	if err != nil {
		return Listed{}, err
	}
	fi, err := os.Lstat(dir + "/" + partialData)
	if errors.Is(err, os.ErrNotExist) {
		fi, err = os.Lstat(dir + "/" + partialOut + "/" + meta.Name)
	}
	if err != nil {
		return Listed{}, err
	}
	return Listed{ID: id, Name: meta.Name, Size: fi.Size(), Made: meta.Created, LastUsed: fi.ModTime().UTC(),
		Path: dir + "/" + partialData}, nil
}
