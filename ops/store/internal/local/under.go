//go:build unix

package local

import (
	"errors"

	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// UnderRoot opens root, following a link as a path argument is, as the first folder of the walk
// that finds the stores below it (store.StoresUnder): a folder is a store when it holds the
// store's mark (or, as stores of earlier versions, its internal folder with the partial folder
// in it).
func UnderRoot(abs string) (store.UnderFolder, error) {
	fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return underDir{fd: fd, path: abs}, nil
}

// underDir is a folder of that walk, open as fd (which it owns) at path.
type underDir struct {
	fd   int
	path string
}

func (d underDir) IsStore() bool { return markedAt(openDirAt(d.fd, InternalDir)) } // its internal folder not a link

func (d underDir) Subfolders() ([]string, error) {
	ents, err := readDirAt(d.fd, d.path)
	var names []string
	for _, e := range ents {
		if e.IsDir() { // typed by getdents: a link is not a folder
			names = append(names, e.Name())
		}
	}
	return names, err
}

func (d underDir) Open(name string) (store.UnderFolder, error) {
	fd, err := openDirAt(d.fd, name)
	switch {
	case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR):
		return nil, nil // gone, or a link or a file since it was listed
	case err != nil:
		return nil, err
	}
	return underDir{fd: fd, path: d.path + "/" + name}, nil
}

func (d underDir) FileSystem() (any, error) { return fsOf(d.fd) }

func (d underDir) Close() { unix.Close(d.fd) }

// markedAt reports whether the internal folder idir (opened with err; closed here) marks a store
// (store.Marks).
func markedAt(idir int, err error) bool {
	if err != nil {
		return false
	}
	defer unix.Close(idir)
	return store.Marks(func(name string, dir bool) bool { return isEntry(idir, name, dir) })
}

// isEntry reports whether name in the folder dirfd is there and a folder (dir) or a regular
// file, a link never followed.
func isEntry(dirfd int, name string, dir bool) bool {
	var st unix.Stat_t
	typ := uint32(unix.S_IFREG)
	if dir {
		typ = unix.S_IFDIR
	}
	return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && uint32(st.Mode)&unix.S_IFMT == typ
}
