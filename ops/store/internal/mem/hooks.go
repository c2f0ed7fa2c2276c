package mem

import (
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// What a test does to a store that a real one reaches only with time, other processes or hands
// behind the store's back.

// Hold is a writer at work on the unfinished upload id (another process writing it): the upload
// is Busy, and no sweep removes it, until release is called.
func (s *Store) Hold(id string) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.partials[id]
	if p == nil {
		return nil, s.missing(id)
	}
	p.holds++
	done := false
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !done {
			p.holds--
			done = true
		}
	}, nil
}

// Plant puts something that is not an upload at path inside the store's location: listed as
// skipped once the location is a store; before that, the location is judged by what was planted
// (store.Judge): under an upload id or the internal folder, a store without its mark, and
// anything else one that is not a store (store.notStore).
func (s *Store) Plant(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.foreign[path] = true
}

// PlantForeignMarker puts a marker the store did not write beside the finished upload id, written
// now: its upload is used when it was written, and the marker is named.
func (s *Store) PlantForeignMarker(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.finished[id]
	if f == nil {
		return s.missing(id)
	}
	f.used, f.foreign = s.now().UTC(), true
	return nil
}

// RemovePartialInfo forgets what the unfinished upload id was begun as (its name, size and begin
// time: what a backend keeps as its info), keeping what it wrote, as a stage killed as it began
// or a sweep killed while it removed the upload leaves it.
func (s *Store) RemovePartialInfo(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.partials[id]
	if p == nil {
		return s.missing(id)
	}
	p.name, p.size, p.made = "", -1, time.Time{}
	return nil
}

// EditFile changes the bytes of the finished file upload id behind the store's back (its
// metadata stays as it was).
func (s *Store) EditFile(id string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.finished[id]
	if f == nil || f.folder() {
		return fault.Errorf(fault.UploadMissing, "upload %s: no finished file upload", id)
	}
	f.data = append([]byte(nil), data...)
	return nil
}

// EditTreeFile changes the file rel of the finished folder upload id named name behind the
// store's back: data written there (a new file when there was none), or the file removed when
// data is nil.
func (s *Store) EditTreeFile(id, name, rel string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.finished[id]
	if f == nil || !f.folder() || f.info.Name != name {
		return fault.Errorf(fault.UploadMissing, "upload %s: no finished folder upload named %s", id, manifest.Quote(name))
	}
	files := make(map[string][]byte, len(f.files)+1)
	for r, d := range f.files {
		files[r] = d
	}
	if data == nil {
		delete(files, rel)
	} else {
		files[rel] = append([]byte(nil), data...)
	}
	f.files = files
	return nil
}

// RemoveFromUpload removes what is at rel in the finished upload id's own place behind the
// store's back: its folder (rel its name: every file of a folder upload) or its metadata
// (MetaName). What is left without its metadata is no upload: it stays, planted, as what is
// not one.
func (s *Store) RemoveFromUpload(id, rel string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.finished[id]
	switch {
	case f == nil:
		return s.missing(id)
	case rel == store.MetaName:
		delete(s.finished, id)
		if f.folder() {
			s.foreign[id+"/"+store.TreeListName] = true
			for r := range f.files {
				s.foreign[id+"/"+f.info.Name+"/"+r] = true
			}
		} else {
			s.foreign[id+"/"+f.info.Name] = true
		}
	case f.folder() && rel == f.info.Name:
		f.files = map[string][]byte{}
	case rel == f.info.Name:
		f.data = nil
	default:
		return fault.Errorf(fault.UploadMissing, "upload %s: holds no %s", id, manifest.Quote(rel))
	}
	return nil
}
