//go:build unix

package local

import (
	"context"
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
// regular, the user's, with one link (ownFile), of mode 0400 (the file, the metadata, the
// listing; an older store's 0600) or 0600 (the marker), a folder upload's folder a real folder of
// mode 0700.
func (s *localStore) checkTop(dirfd int, id, name string, tree bool) error {
	dir := s.UploadDir(id)
	var st unix.Stat_t
	if err := unix.Fstat(dirfd, &st); err != nil {
		return guardErr(id)(dir, err)
	}
	if uint32(st.Mode)&0o7777 != uint32(DirMode) {
		return fault.Errorf(fault.UploadUnreadable, "upload %s: %s: folder mode %04o, not 0700", id, dir, uint32(st.Mode)&0o7777)
	}
	if st.Uid != euid {
		return fault.Errorf(fault.UploadUnreadable, "upload %s: %s: owned by uid %d, not by the current user", id, dir, st.Uid)
	}
	ents, err := readDirAt(dirfd, dir)
	if err != nil {
		return guardErr(id)(dir, err)
	}
	for _, e := range ents {
		n := e.Name()
		if !store.BesideUpload(name, n, tree) && !strings.HasPrefix(n, markerTmp) {
			return fault.Errorf(fault.UploadUnreadable, "upload %s: %s: unexpected entry %q", id, dir, n)
		}
		if err := unix.Fstatat(dirfd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return guardErr(id)(dir+"/"+n, err)
		}
		mode, typ := uint32(st.Mode)&0o7777, uint32(st.Mode)&unix.S_IFMT
		want, modeOK := wantMode(n, mode)
		why := ownFile(&st)
		switch {
		case tree && n == name && typ != unix.S_IFDIR:
			why = "not a real folder"
		case tree && n == name && mode != uint32(DirMode):
			why = fmt.Sprintf("folder mode %04o, not 0700", mode)
		case tree && n == name:
			why = ""
		case why != "":
		case !modeOK && want == FileMode:
			why = fmt.Sprintf("mode %04o, not 0600", mode)
		case !modeOK:
			why = fmt.Sprintf("mode %04o, not 0400 (or an older store's 0600)", mode)
		}
		if why != "" {
			return fault.Errorf(fault.UploadUnreadable, "upload %s: %s/%s: %s", id, dir, n, why)
		}
	}
	return nil
}

// wantMode is the mode the store gives the regular file n of an upload's folder, and whether it
// takes perm: the marker (and one being written) 0600; anything else (the file, the metadata,
// the listing) 0400, or an older store's 0600.
func wantMode(n string, perm uint32) (os.FileMode, bool) {
	if n == UsedName || strings.HasPrefix(n, markerTmp) {
		return FileMode, perm == uint32(FileMode)
	}
	return ReadOnlyMode, finishedMode(perm)
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
