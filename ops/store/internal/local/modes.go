//go:build unix

package local

import (
	"context"
	"os"
	"path/filepath"

	"github.com/attachctl/attachctl/ops/store"
)

// WrongMode is store.Moder: the modes verify's rules require of an upload's folder and of the
// files in it (Check), named with the mode to restore. The folder is 0700; a finished upload's
// own files are 0400 (or an older store's 0600), a marker 0600 (wantMode).
func (s *localStore) WrongMode(_ context.Context, id string) (store.ModeRepair, bool) {
	if store.ValidID(id) != nil || s.open(false) != nil {
		return store.ModeRepair{}, false
	}
	return wrongMode(s.UploadDir(id))
}

// wrongMode is WrongMode of the upload folder dir. It reads modes only (lstat, a listing), and
// says nothing of what is not a regular file: Check names that.
func wrongMode(dir string) (store.ModeRepair, bool) {
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return store.ModeRepair{}, false
	} else if fi.Mode().Perm() != DirMode {
		return store.ModeRepair{Path: dir, Mode: DirMode}, true
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return store.ModeRepair{}, false
	}
	for _, ent := range ents {
		fi, err := ent.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if want, ok := wantMode(ent.Name(), uint32(fi.Mode().Perm())); !ok {
			return store.ModeRepair{Path: filepath.Join(dir, ent.Name()), Mode: want}, true
		}
	}
	return store.ModeRepair{}, false
}
