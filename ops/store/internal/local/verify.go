//go:build unix

package local

import (
	"io/fs"
	"os"
	"path/filepath"

	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// The store's finished uploads as store.UploadFolders, the folders of the rules that read them.
var _ store.UploadFolders = (*localStore)(nil)

// OpenUpload opens the folder of upload id from the store down, no link followed, its errors and
// its files' opens coded as the guarded open of upload id codes them (guardErr).
func (s *localStore) OpenUpload(id string) (store.FileDir, error) {
	fd, err := s.openDir(guardErr(id), false, id)
	if err != nil {
		return nil, err
	}
	return s.uploadDirAt(fd, id), nil
}

// uploadDirAt is the folder of upload id open as fd, as OpenUpload opens it.
func (s *localStore) uploadDirAt(fd int, id string) fdDir {
	return fdDir{fd, s.UploadDir(id), fdDirs{fd: -1, path: s.Dir, id: id, code: guardErr(id)}}
}

// UploadDirs opens top in the folder of upload id as OpenUpload opens that folder, and gives the
// folders below it, listed with the system's errors, one on another file system than the upload's
// folder not entered.
func (s *localStore) UploadDirs(id, top string) (store.FileDirs, func(), error) {
	code, dir := guardErr(id), s.UploadDir(id)
	up, err := s.openDir(code, false, id)
	if err != nil {
		return nil, nil, err
	}
	defer unix.Close(up)
	root, err := fsOf(up)
	if err != nil {
		return nil, nil, code(dir, err)
	}
	fd, err := openDirs(up, dir, openOnly(code), top)
	if err != nil {
		return nil, nil, err
	}
	return fdDirs{fd: fd, path: filepath.Join(dir, top), root: root, id: id, code: sysErr}, func() { unix.Close(fd) }, nil
}

// StoreDirs is the store folder and the folders below it, their errors the system's.
func (s *localStore) StoreDirs() (store.FileDirs, func(), error) {
	fd, err := s.openDir(sysErr, false)
	if err != nil {
		return nil, nil, err
	}
	return fdDirs{fd: fd, path: s.Dir, code: sysErr}, func() { unix.Close(fd) }, nil
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
