//go:build unix

package local

import (
	"io"
	"os"
	"sort"

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
	f, err := openGuarded(dirfd, MetaName, s.UploadDir(id)+"/"+MetaName, id)
	if fault.CodeOf(err) == fault.UploadMissing {
		// A small upload of a batch: its metadata is its commit's file (metaindex.go).
		// Named by no file there, it is what a folder without metadata always was: no finished
		// upload (err); named by two, damaged.
		switch m, ok := s.indexed(id); {
		case ok && m != nil:
			return &store.TreeMeta{Info: *m}, nil
		case ok:
			return nil, s.damagedMeta(id)
		}
		return nil, fault.Errorf(fault.UploadMissing, "upload %s: %s: not a finished upload in this store (no %s, and no file of %s names it)",
			id, s.UploadDir(id), MetaName, s.internal(metaDir))
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(store.TreeObjectMax)+1)) // a folder upload's names each file's size
	if err != nil {
		return nil, fault.Errorf(fault.UploadUnreadable, "upload %s: %s is damaged", id, f.Name())
	}
	return store.ParseTreeMeta(id, b, f.Name())
}

// IDs lists the entries at the top of the store whose names are upload ids, sorted. It does not
// say whether each is a real, finished upload: ReadMeta and OpenFinished do.
func (s *localStore) IDs() ([]string, error) {
	fd, err := s.openIfThere()
	if err != nil || fd < 0 {
		return nil, err // a store not made yet is empty
	}
	d := os.NewFile(uintptr(fd), s.Dir) // d owns fd
	defer d.Close()
	return idsIn(d)
}

// idsIn lists the names in the open folder d that are upload ids, sorted.
func idsIn(d *os.File) ([]string, error) {
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, storeErr(d.Name(), err)
	}
	ids := names[:0]
	for _, n := range names {
		if store.ValidID(n) == nil {
			ids = append(ids, n)
		}
	}
	sort.Strings(ids)
	return ids, nil
}
