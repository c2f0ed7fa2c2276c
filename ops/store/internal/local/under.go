//go:build unix

package local

import (
	"errors"
	"os"
	"path/filepath"
	"sort"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// StoresUnder finds every store below root (root itself included), for `sweep --stores-under`:
// a folder is a store when it holds the store's mark (or, as stores of earlier versions, its
// internal folder with the partial folder in it). The walk never descends into a store, follows
// no link (root itself excepted, as a path argument is) and stays on root's file system. What it
// cannot read is returned in skipped, named with why, and does not stop it. Stores come in
// lexical order of their paths.
func StoresUnder(root string) (stores []string, skipped []store.Skip, err error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, nil, fault.Errorf(fault.FileMissing, "%s: %v", root, err)
	}
	fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, nil, fault.Errorf(fault.FileMissing, "%s: no such folder", abs)
		}
		return nil, nil, fault.Errorf(fault.FileUnreadable, "%s: %v", abs, err)
	}
	fs, err := fsOf(fd)
	if err != nil {
		unix.Close(fd)
		return nil, nil, fault.Errorf(fault.FileUnreadable, "%s: %v", abs, err)
	}
	w := storeWalk{fs: fs}
	w.walk(fd, abs)
	sort.Strings(w.stores)
	return w.stores, w.skipped, nil
}

type storeWalk struct {
	fs      fsID
	stores  []string
	skipped []store.Skip
}

// walk looks at the folder fd (which it closes) at path: a store, or folders to look into.
func (w *storeWalk) walk(fd int, path string) {
	d := os.NewFile(uintptr(fd), path) // d owns fd
	defer d.Close()
	if markedAt(openDirAt(fd, InternalDir)) { // a store: its internal folder not a link
		w.stores = append(w.stores, path)
		return
	}
	ents, err := d.ReadDir(-1)
	if err != nil {
		w.skipped = append(w.skipped, store.Skip{Path: path, Why: err.Error()})
	}
	for _, e := range ents {
		if !e.IsDir() { // a link, even to a folder, is not followed
			continue
		}
		sub := filepath.Join(path, e.Name())
		cfd, err := openDirAt(fd, e.Name())
		if err != nil {
			if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENOTDIR) {
				w.skipped = append(w.skipped, store.Skip{Path: sub, Why: err.Error()})
			}
			continue
		}
		if fs, err := fsOf(cfd); err != nil || fs != w.fs {
			unix.Close(cfd) // another file system: not crossed
			continue
		}
		w.walk(cfd, sub)
	}
}

// markedAt reports whether the internal folder idir (opened with err; closed here) marks a store:
// it holds the mark, or (as stores of earlier versions) the partial folder, neither a link.
func markedAt(idir int, err error) bool {
	if err != nil {
		return false
	}
	defer unix.Close(idir)
	return isEntry(idir, markName, unix.S_IFREG) || isEntry(idir, partialDir, unix.S_IFDIR)
}

// isEntry reports whether name in the folder dirfd is there and of type typ (unix.S_IFREG,
// unix.S_IFDIR), a link never followed.
func isEntry(dirfd int, name string, typ uint32) bool {
	var st unix.Stat_t
	return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && uint32(st.Mode)&unix.S_IFMT == typ
}
