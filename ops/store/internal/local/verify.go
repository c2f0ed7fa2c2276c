//go:build unix

package local

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// Check is the local store's own rules on the file upload id (store.Checker, which verify asks of
// file uploads; a folder upload's own folder is checked by ReadTreeDir): the folder is a real
// folder of mode 0700 owned by the user, and its entries are the file, the metadata and at most a
// marker (checkTop).
func (s *localStore) Check(_ context.Context, id string) error {
	if err := s.open(false); err != nil {
		return err
	}
	if err := store.ValidID(id); err != nil {
		return err
	}
	dirfd, err := s.openDir(guardErr(id), false, id)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	meta, err := s.readMetaAt(dirfd, id)
	if err != nil {
		return err
	}
	return s.checkTop(dirfd, id, meta.Name, false)
}

// checkTop checks the upload folder open as dirfd as the store demands (store.FileFolder.Check),
// its stat and its entries' read through statTop.
func (s *localStore) checkTop(dirfd int, id, name string, tree bool) error {
	u := store.FileFolder{ID: id, Dir: s.UploadDir(id), Name: name, Tree: tree, Temp: markerTmp}
	var err error
	if u.Entries, err = statTop(dirfd, u.Dir, guardErr(id)); err != nil {
		return err
	}
	return u.Check()
}

// WrongMode is store.Moder: the first of the upload's folder and the regular files in it whose
// mode is not the one checkTop takes (store.FileFolder.WrongMode). It reads modes only, the
// metadata not needed. The folder's own mode is read before it is opened, so one closed even to
// the user is named too.
func (s *localStore) WrongMode(_ context.Context, id string) (r store.ModeRepair, ok bool) {
	if store.ValidID(id) != nil || s.open(false) != nil {
		return r, false
	}
	storefd, err := s.openDir(sysErr, false)
	if err != nil {
		return r, false
	}
	defer unix.Close(storefd)
	u := store.FileFolder{Dir: s.UploadDir(id), Temp: markerTmp}
	var st unix.Stat_t
	err = unix.Fstatat(storefd, id, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err != nil || uint32(st.Mode)&unix.S_IFMT != unix.S_IFDIR {
		return r, false
	}
	u.Entries = []store.FileStat{statOf("", &st)}
	if dirfd, err := openDirAt(storefd, id); err == nil {
		if ents, err := statTop(dirfd, u.Dir, sysErr); err == nil {
			u.Entries = append(u.Entries, ents[1:]...)
		}
		unix.Close(dirfd)
	}
	return u.WrongMode()
}

// statTop reads the stat of the folder dirfd (at dir; Name "") and then of each entry in it (not
// following a link), in the listing's order; code codes an error reading them.
func statTop(dirfd int, dir string, code func(path string, err error) error) ([]store.FileStat, error) {
	var st unix.Stat_t
	if err := unix.Fstat(dirfd, &st); err != nil {
		return nil, code(dir, err)
	}
	top := statOf("", &st)
	sts, err := statEntries(dirfd, dir, code)
	if err != nil {
		return nil, err
	}
	return append([]store.FileStat{top}, sts...), nil
}

// statEntries reads the stat of each entry of the folder dirfd (at dir), never following a link,
// sorted by name; code codes an error reading them.
func statEntries(dirfd int, dir string, code func(path string, err error) error) ([]store.FileStat, error) {
	ents, err := readDirAt(dirfd, dir)
	if err != nil {
		return nil, code(dir, err)
	}
	sts := make([]store.FileStat, 0, len(ents))
	for _, e := range ents {
		var st unix.Stat_t
		if err := unix.Fstatat(dirfd, e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return nil, code(dir+"/"+e.Name(), err)
		}
		sts = append(sts, statOf(e.Name(), &st))
	}
	return sts, nil
}

// statOf is the stat st of the entry name as the store's rules read it.
func statOf(name string, st *unix.Stat_t) store.FileStat {
	fst := store.FileStat{Name: name, Perm: uint32(st.Mode) & 0o7777, Uid: st.Uid, Own: st.Uid == euid,
		Links: uint64(st.Nlink), Size: st.Size, At: timespec(st.Mtim)}
	switch uint32(st.Mode) & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		fst.Type = fs.ModeDir
	case unix.S_IFLNK:
		fst.Type = fs.ModeSymlink
	default:
		fst.Type = fs.ModeIrregular
	}
	return fst
}

// OpenUploadPath opens the absolute path abs named by a b3sum line (verify --check) when it is a
// finished upload of a store (STORE/<id>/<name>, STORE a store), only through the guarded open: a
// symlink, a FIFO or a hard link there fails with upload.unreadable and nothing blocks. ok is
// false for any other path, which the caller opens as any file (open.ForCheck).
func OpenUploadPath(abs string) (f *os.File, ok bool, err error) {
	dir, name := filepath.Split(abs)
	dir = filepath.Clean(dir)
	id := filepath.Base(dir)
	if store.ValidID(id) != nil || store.ValidName(name) != nil {
		return nil, false, nil
	}
	s := &localStore{Dir: filepath.Dir(dir)}
	if kind, err := s.judge(); err != nil || !kind.Store() {
		return nil, false, nil
	}
	f, err = s.OpenFinished(id, name)
	return f, true, err
}
