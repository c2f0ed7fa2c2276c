//go:build unix

package local

import (
	"path/filepath"
	"slices"

	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// ReadMeta reads a finished upload's metadata through the guarded open (store.ReadUploadMeta).
func (s *localStore) ReadMeta(id string) (*Meta, error) {
	m, err := store.ReadUploadMeta(s, id)
	if err != nil {
		return nil, err
	}
	return &m.Info, nil
}

// readMetaAt reads the metadata of upload id from its open folder dirfd, which stays the
// caller's (store.UploadMetaIn).
func (s *localStore) readMetaAt(dirfd int, id string) (*store.TreeMeta, error) {
	return store.UploadMetaIn(s, s.uploadDirAt(dirfd, id), id)
}

// IndexedMeta is the metadata of a small upload of a batch, kept in its commit's file (indexed).
func (s *localStore) IndexedMeta(id string) (*Meta, error) { return s.indexed(id) }

// IDs lists the entries at the top of the store whose names are upload ids, sorted. It does not
// say whether each is a real, finished upload: ReadMeta and openUploadFile do.
func (s *localStore) IDs() ([]string, error) { return s.idsIn() }

// idsIn lists the names in STORE/<names...> that are upload ids, sorted: none when it is not
// there (a store not made yet is empty).
func (s *localStore) idsIn(names ...string) ([]string, error) {
	fd, ids, err := s.listIfThere(names...)
	if fd >= 0 {
		unix.Close(fd)
	}
	return slices.DeleteFunc(ids, func(n string) bool { return store.ValidID(n) != nil }), err
}

// listIfThere opens STORE/<names...> as openIfThere does and lists the names in it (namesAt): fd
// is -1, with none, when a folder on the way is not there. The caller closes fd.
func (s *localStore) listIfThere(names ...string) (int, []string, error) {
	fd, err := s.openIfThere(names...)
	if err != nil || fd < 0 {
		return -1, nil, err
	}
	path := filepath.Join(append([]string{s.Dir}, names...)...)
	list, err := namesAt(fd, path)
	if err != nil {
		unix.Close(fd)
		return -1, nil, storeErr(path, err)
	}
	return fd, list, nil
}
