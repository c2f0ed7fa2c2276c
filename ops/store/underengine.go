package store

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/attachctl/attachctl/manifest/fault"
)

// UnderFolder is one open folder of the walk that finds the stores below a root (StoresUnder),
// as a backend that keeps its stores in folders reads it: the walk's rules are StoresUnder's,
// the backend gives only what one folder says. None of its methods follows a link.
type UnderFolder interface {
	// IsStore reports whether the folder is a store: its internal folder marks it (Marks), no link
	// followed.
	IsStore() bool
	// Subfolders lists the names of the folder's entries that are folders; a link, even to a
	// folder, is none. What it listed before an error comes with the error.
	Subfolders() ([]string, error)
	// Open opens the subfolder name, never through a link; nil and no error when name is no
	// folder there any more (gone, or a link or a file since it was listed).
	Open(name string) (UnderFolder, error)
	// FileSystem names the file system the folder is on, as a comparable value: the walk does
	// not leave root's.
	FileSystem() (any, error)
	Close()
}

// StoresUnder finds every store below root (root itself included), for `sweep --stores-under`,
// over the folders openRoot opens (root through a link, as a path argument is; openRoot's error
// of a missing root is fs.ErrNotExist, and one that carries a fault code is returned as it is).
// The walk never descends into a store, follows no link (UnderFolder) and stays on root's file
// system. What it cannot read is returned in skipped, named with why, and does not stop it.
// Stores come in lexical order of their paths.
func StoresUnder(root string, openRoot func(abs string) (UnderFolder, error)) (stores []string, skipped []Skip, err error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, nil, fault.Errorf(fault.FileMissing, "%s: %v", root, err)
	}
	top, err := openRoot(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, fault.Errorf(fault.FileMissing, "%s: no such folder", abs)
	case err != nil && fault.CodeOf(err) != "":
		return nil, nil, err
	case err != nil:
		return nil, nil, fault.Errorf(fault.FileUnreadable, "%s: %v", abs, err)
	}
	w := underWalk{}
	if w.fs, err = top.FileSystem(); err != nil {
		top.Close()
		return nil, nil, fault.Errorf(fault.FileUnreadable, "%s: %v", abs, err)
	}
	w.walk(top, abs)
	slices.Sort(w.stores)
	return w.stores, w.skipped, nil
}

type underWalk struct {
	fs      any // root's file system
	stores  []string
	skipped []Skip
}

// walk looks at the folder d (which it closes) at path: a store, or folders to look into, in
// the order of their names.
func (w *underWalk) walk(d UnderFolder, path string) {
	defer d.Close()
	if d.IsStore() {
		w.stores = append(w.stores, path)
		return
	}
	names, err := d.Subfolders()
	if err != nil {
		w.skipped = append(w.skipped, Skip{Path: path, Why: err.Error()})
	}
	slices.Sort(names)
	for _, name := range names {
		sub := filepath.Join(path, name)
		c, err := d.Open(name)
		switch {
		case err != nil:
			w.skipped = append(w.skipped, Skip{Path: sub, Why: err.Error()})
			continue
		case c == nil:
			continue
		}
		if fs, err := c.FileSystem(); err != nil || fs != w.fs {
			c.Close() // another file system: not crossed
			continue
		}
		w.walk(c, sub)
	}
}
