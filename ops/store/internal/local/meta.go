//go:build unix

package local

import (
	"path/filepath"
	"slices"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// ReadMeta reads a finished upload's metadata through the guarded open.
func (s *localStore) ReadMeta(id string) (*Meta, error) {
	if err := store.ValidID(id); err != nil {
		return nil, err
	}
	dirfd, err := s.openDir(guardErr(id), false, id)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	m, err := s.readMetaAt(dirfd, id)
	if err != nil {
		return nil, err
	}
	return &m.Info, nil
}

// readMetaAt reads the metadata of upload id from its open folder dirfd: a folder upload's
// carries its kind and files too (a listing's Entry shows them).
func (s *localStore) readMetaAt(dirfd int, id string) (*store.TreeMeta, error) {
	b, path, err := s.readUploadFile(dirfd, id, MetaName)
	switch code := fault.CodeOf(err); {
	case code == fault.UploadMissing:
		// A small upload of a batch: its metadata is its commit's file (metaindex.go).
		m, err := s.indexed(id)
		if err != nil {
			return nil, err
		}
		return &store.TreeMeta{Info: *m}, nil
	case code != "": // refused by the guarded open, or unreadable (readGuarded codes every error)
		return nil, err
	}
	return store.ParseTreeMeta(id, b, path)
}

// readUploadFile reads whole .upload.json or .tree.b3 of upload id from its open folder dirfd
// through the guarded open, and where it is: a folder upload's names each file's size, so up to
// store.TreeObjectMax bytes and one more, which tells one too long. Every error is coded as the
// guarded open codes it (readGuarded).
func (s *localStore) readUploadFile(dirfd int, id, name string) ([]byte, string, error) {
	path := s.UploadDir(id) + "/" + name
	b, err := readGuarded(dirfd, name, path, id, int64(store.TreeObjectMax)+1)
	return b, path, err
}

// IDs lists the entries at the top of the store whose names are upload ids, sorted. It does not
// say whether each is a real, finished upload: ReadMeta and OpenFinished do.
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
