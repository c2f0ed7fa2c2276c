//go:build unix

package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/attachctl/attachctl/manifest/fault"
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

// checkTop checks the upload folder's mode and entries: a real folder of mode 0700 owned by the
// user, holding only what store.BesideUpload allows (and a marker being written), the files
// regular, the user's, with one link (ownFile), of the mode topMode names, a folder upload's
// folder a real folder of mode 0700.
func (s *localStore) checkTop(dirfd int, id, name string, tree bool) error {
	dir := s.UploadDir(id)
	return eachTop(dirfd, dir, guardErr(id), func(n string, st *unix.Stat_t) error {
		p, why := dir, ""
		if n != "" {
			p = dir + "/" + n
		}
		isDir := uint32(st.Mode)&unix.S_IFMT == unix.S_IFDIR
		switch {
		case n == "" || tree && n == name && isDir: // a folder: its mode (below), its owner if the top
			if n == "" && st.Uid != euid {
				why = fmt.Sprintf("owned by uid %d, not by the current user", st.Uid)
			}
		case !store.BesideUpload(name, n, tree) && !strings.HasPrefix(n, markerTmp):
			p, why = dir, fmt.Sprintf("unexpected entry %q", n)
		case tree && n == name:
			why = "not a real folder"
		default:
			why = ownFile(st)
		}
		mode := uint32(st.Mode) & 0o7777
		if want, ok := topMode(n, isDir, mode); why == "" && !ok {
			why = modeWhy(want, mode)
		}
		if why != "" {
			return fault.Errorf(fault.UploadUnreadable, "upload %s: %s: %s", id, p, why)
		}
		return nil
	})
}

// WrongMode is store.Moder: the first of the upload's folder and the regular files in it whose
// mode is not the one checkTop takes (topMode), with the mode to restore. It reads modes only,
// the metadata not needed, and says nothing of what is not a regular file: Check names that. The
// folder's own mode is read before it is opened, so one closed even to the user is named too.
func (s *localStore) WrongMode(_ context.Context, id string) (r store.ModeRepair, ok bool) {
	if store.ValidID(id) != nil || s.open(false) != nil {
		return r, false
	}
	storefd, err := s.openDir(sysErr, false)
	if err != nil {
		return r, false
	}
	defer unix.Close(storefd)
	dir := s.UploadDir(id)
	look := func(n string, st *unix.Stat_t) error {
		if want, good := topMode(n, n == "", uint32(st.Mode)&0o7777); !good {
			r, ok = store.ModeRepair{Path: filepath.Join(dir, n), Mode: want}, true
			return errStopTop
		}
		return nil
	}
	var st unix.Stat_t
	err = unix.Fstatat(storefd, id, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err != nil || uint32(st.Mode)&unix.S_IFMT != unix.S_IFDIR || look("", &st) != nil {
		return r, ok
	}
	dirfd, err := openDirAt(storefd, id)
	if err != nil {
		return r, false
	}
	defer unix.Close(dirfd)
	eachTop(dirfd, dir, sysErr, func(n string, st *unix.Stat_t) error {
		if n == "" || uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG {
			return nil // the folder was looked at before it was opened
		}
		return look(n, st)
	})
	return r, ok
}

// errStopTop ends eachTop at what its caller was looking for.
var errStopTop = errors.New("found")

// eachTop gives f the stat of the upload folder dirfd (at dir; n "") and then of each entry in it
// (not following a link), in the listing's order, until f returns an error; code codes one
// reading them.
func eachTop(dirfd int, dir string, code func(path string, err error) error, f func(n string, st *unix.Stat_t) error) error {
	var st unix.Stat_t
	if err := unix.Fstat(dirfd, &st); err != nil {
		return code(dir, err)
	}
	if err := f("", &st); err != nil {
		return err
	}
	ents, err := readDirAt(dirfd, dir)
	if err != nil {
		return code(dir, err)
	}
	for _, e := range ents {
		if err := unix.Fstatat(dirfd, e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return code(dir+"/"+e.Name(), err)
		}
		if err := f(e.Name(), &st); err != nil {
			return err
		}
	}
	return nil
}

// topMode is the mode the store gives the entry n of an upload's folder ("" the folder itself),
// and whether it takes mode: a folder 0700; the marker (and one being written) 0600; anything
// else (the file, the metadata, the listing) 0400, or an older store's 0600.
func topMode(n string, dir bool, mode uint32) (os.FileMode, bool) {
	switch {
	case dir:
		return DirMode, mode == uint32(DirMode)
	case n == UsedName || strings.HasPrefix(n, markerTmp):
		return FileMode, mode == uint32(FileMode)
	}
	return ReadOnlyMode, finishedMode(mode)
}

// modeWhy says why an entry of mode is refused where the store gives it want: one message for
// checkTop and the guarded open, naming the older store's 0600 a finished file may keep.
func modeWhy(want os.FileMode, mode uint32) string {
	why := fmt.Sprintf("mode %04o, not %04o", mode, want)
	switch want {
	case DirMode:
		return "folder " + why
	case ReadOnlyMode:
		return why + " (or an older store's 0600)"
	}
	return why
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
