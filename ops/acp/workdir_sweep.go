package acp

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// RemoveCopies removes from the work folder dir (resolve's --workdir: one folder DIR/<id>/ per
// upload) the copies of the uploads that doomed says are removed or gone, and returns the folders
// it removed (with dryRun, would remove). Only what resolve makes there is touched:
// an entry whose name is an upload id and that is a real folder (not a link); everything else is
// left. Removal works below dir (os.Root), so a link inside a copy's folder is removed as a link
// and nothing outside dir is reached. A work folder that does not exist has nothing to remove; one
// that is a store (it has the store's internal folder) is refused, since its upload folders are
// not copies.
func RemoveCopies(dir string, doomed func(id string) bool, dryRun bool) ([]string, error) {
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fault.Errorf(fault.UploadUnreadable, "work folder %s: %v", dir, err)
	}
	defer root.Close()
	if fi, err := root.Lstat(store.InternalDir); err == nil && fi.IsDir() {
		return nil, fault.Errorf(fault.UploadInvalid, "work folder %s: is a store (it has %s), not a work folder; nothing removed", dir, store.InternalDir)
	}
	f, err := root.Open(".")
	if err != nil {
		return nil, fault.Errorf(fault.UploadUnreadable, "work folder %s: %v", dir, err)
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return nil, fault.Errorf(fault.UploadUnreadable, "work folder %s: %v", dir, err)
	}
	var removed []string
	var first error
	for _, e := range ents {
		id := e.Name()
		if store.ValidID(id) != nil || !e.IsDir() || e.Type()&fs.ModeSymlink != 0 || !doomed(id) {
			continue
		}
		if !dryRun {
			if err := root.RemoveAll(id); err != nil {
				if first == nil {
					first = fault.Errorf(fault.UploadUnreadable, "work folder %s: removing the copy of upload %s: %v", dir, id, err)
				}
				continue
			}
		}
		removed = append(removed, filepath.Join(dir, id))
	}
	return removed, first
}
