//go:build unix

package local

import (
	"context"
	"io/fs"
	"os"

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
	d, err := s.uploadDir(id)
	if err != nil {
		return err
	}
	defer d.Close()
	meta, err := s.readMetaAt(int(d.f.Fd()), id)
	if err != nil {
		return err
	}
	return s.checkTop(d, id, meta.Name, false)
}

// uploadDir opens the folder of upload id, once for all a check reads of it.
func (s *localStore) uploadDir(id string) (fdDir, error) {
	if err := store.ValidID(id); err != nil {
		return fdDir{}, err
	}
	code := guardErr(id)
	fd, err := s.openDir(code, false, id)
	if err != nil {
		return fdDir{}, err
	}
	return fdDir{os.NewFile(uintptr(fd), s.UploadDir(id)), fdDirs{fd: -1, path: s.Dir, code: code}}, nil
}

// checkTop checks d, the open folder of upload id, as the store demands (store.FileFolder.Check).
func (s *localStore) checkTop(d fdDir, id, name string, tree bool) error {
	u := store.FileFolder{ID: id, Dir: s.UploadDir(id), Name: name, Tree: tree}
	var err error
	if u.Entries, err = store.StatFileFolder(d); err != nil {
		return err
	}
	return u.Check()
}

// WrongMode is store.Moder: the first of the upload's folder and the regular files in it whose
// mode is not the one checkTop takes (store.FileFolder.WrongMode), one closed even to the user
// included. It reads modes only, the metadata not needed.
func (s *localStore) WrongMode(_ context.Context, id string) (store.ModeRepair, bool) {
	if store.ValidID(id) != nil || s.open(false) != nil {
		return store.ModeRepair{}, false
	}
	u := store.FileFolder{Dir: s.UploadDir(id)}
	u.Entries, _ = s.statUpload(id, sysErr)
	return u.WrongMode()
}

// statUpload reads the stat of the folder of upload id, before it is opened too, and then of each
// entry in it, no link followed (store.ReadFileFolder); code codes an error reading them.
func (s *localStore) statUpload(id string, code func(path string, err error) error) ([]store.FileStat, error) {
	storefd, err := s.openDir(code, false)
	if err != nil {
		return nil, err
	}
	defer unix.Close(storefd)
	return store.ReadFileFolder(fdDirs{fd: storefd, path: s.Dir, code: code}, id)
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
// file of a finished upload of a store (STORE/<id>/<name>, or STORE/<id>/<name>/<rel> in a folder
// upload; STORE a store), only through the guarded open: a symlink, a FIFO or a hard link there, or
// a link on the way down from the store, fails with upload.unreadable and nothing blocks. ok is
// false for any other path, which the caller opens as any file (open.ForCheck).
func OpenUploadPath(abs string) (f *os.File, ok bool, err error) {
	for _, p := range store.UploadPathsOf(abs) {
		s := &localStore{Dir: p.Store}
		if kind, err := s.judge(); err != nil || !kind.Store() {
			continue
		}
		f, err = s.openUploadFile(p.ID, p.Rel)
		return f, true, err
	}
	return nil, false, nil
}
