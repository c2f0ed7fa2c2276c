package store

import (
	"context"
	"io"
	"io/fs"
	"path"
)

// A folder upload kept as files in folders on this machine (the local store): the tree write
// (which folder holds which file, what a resume keeps of a killed run's copy, what is removed
// before a file is made, what a folder's listing reports, which folders are made durable) written
// once over the folders a backend opens (FileDirs); the backend keeps the opens, creates, removes
// and syncs of one folder, and the publish.

// FileDirs are the folders of a tree kept as files, below its top.
type FileDirs interface {
	// OpenDir opens the folder rel ("." the top) below the tree's top, each folder on the way
	// opened without following a link: with create, made where missing (as the store makes a
	// folder: DirMode, whatever the umask).
	OpenDir(rel string, create bool) (FileDir, error)
}

// FileDir is one open folder of such a tree. Its errors are coded by the backend.
type FileDir interface {
	// Names lists the names of its entries, sorted.
	Names() ([]string, error)
	// Stat is the stat of its entry name, no link followed; "" the folder itself, as opened.
	Stat(name string) (FileStat, error)
	// Elsewhere reports whether the folder name in it is on another file system than the tree's
	// top: such a folder is not entered.
	Elsewhere(name string) (bool, error)
	// Open opens the file name through the backend's guarded open, with its stat.
	Open(name string) (io.ReadCloser, FileStat, error)
	// Create makes the new file name, read-only (ReadOnlyMode) from the start.
	Create(name string) (TreeFileWrite, error)
	// Remove removes what is at name, a file, a link or a folder with all it holds, never
	// following a link.
	Remove(name string) error
	// Sync makes the names made in the folder durable.
	Sync() error
	Close()
}

// touchEvery is how many files FileTreeWrite writes between two Touch calls.
const touchEvery = 256

// FileTreeWrite is TreeWrite's Stored, Create, ReadDir and Remove for a tree kept as files in
// Dirs; the backend adds ID, Publish and Close (CloseDir first). Its files come one after another
// in the order of their paths (TreeProperties.Jobs 1), so most share the last one's folder, which
// is kept open.
type FileTreeWrite struct {
	Dirs FileDirs
	// Touch, if set, is called every touchEvery files: the upload is being written now (a
	// sweep's cutoff for unfinished uploads is their last write).
	Touch func()
	n     int
	dir   string  // the folder of the last file's path, open as d
	d     FileDir // nil: none open
}

// Stored opens the copy of f a killed run left through the guarded open, when it is read-only, as
// a finished upload's files are and as Create makes them: a copy of another mode is no copy of the
// store's, and is written again.
func (t *FileTreeWrite) Stored(f TreeFile) (io.ReadCloser, error) {
	d, err := t.dirFor(f.Rel)
	if err != nil {
		return nil, err
	}
	have, st, err := d.Open(path.Base(f.Rel))
	if err != nil {
		return nil, nil
	}
	if st.Perm != uint32(ReadOnlyMode) {
		have.Close()
		return nil, nil
	}
	return have, nil
}

// Create makes the copy of f anew, read-only at once: a resume keeps it only if it is whole and
// equal to the source. What was there (Stored did not keep it) is removed first.
func (t *FileTreeWrite) Create(_ context.Context, f TreeFile, _ TreeSourceFile, there bool) (TreeFileWrite, error) {
	d, err := t.dirFor(f.Rel)
	if err != nil {
		return nil, err
	}
	if there {
		if err := d.Remove(path.Base(f.Rel)); err != nil {
			return nil, err
		}
	}
	return d.Create(path.Base(f.Rel))
}

// ReadDir lists the folder dir of the tree as ReadTreeDir lists a finished one (ListFileDir).
func (t *FileTreeWrite) ReadDir(_ context.Context, dir string) ([]TreeEntry, error) {
	return ListFileDir(t.Dirs, dir)
}

// Remove removes the entries rels of the tree, each from its folder.
func (t *FileTreeWrite) Remove(_ context.Context, rels []string) error {
	for _, rel := range rels {
		d, err := t.Dirs.OpenDir(path.Dir(rel), false)
		if err != nil {
			return err
		}
		err = d.Remove(path.Base(rel))
		d.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// SyncDirs makes the names made in every folder of the tree of files durable, each folder once:
// what a backend that makes each file durable as it is closed does before it publishes.
func (t *FileTreeWrite) SyncDirs(files []TreeFile) error {
	t.CloseDir()
	for _, dir := range TreeDirs(files) {
		d, err := t.Dirs.OpenDir(dir, false)
		if err != nil {
			return err
		}
		err = d.Sync()
		d.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// CloseDir closes the folder kept open.
func (t *FileTreeWrite) CloseDir() {
	if t.d != nil {
		t.d.Close()
		t.d = nil
	}
}

// dirFor returns the open folder that holds rel, opening or making the folders on the way (what
// stood in the way of one the engine removed first).
func (t *FileTreeWrite) dirFor(rel string) (FileDir, error) {
	if t.n++; t.n%touchEvery == 0 && t.Touch != nil {
		t.Touch()
	}
	dir := path.Dir(rel)
	if t.d != nil && t.dir == dir {
		return t.d, nil
	}
	t.CloseDir()
	d, err := t.Dirs.OpenDir(dir, true)
	if err != nil {
		return nil, err
	}
	t.dir, t.d = dir, d
	return d, nil
}

// ListFileDir lists the folder rel of dirs as ReadTreeDir and TreeWrite.ReadDir list one: each
// entry as its stat says (FileStat.TreeEntry), a folder on another file system not entered.
func ListFileDir(dirs FileDirs, rel string) ([]TreeEntry, error) {
	d, err := dirs.OpenDir(rel, false)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	sts, err := listStats(d)
	if err != nil {
		return nil, err
	}
	es := make([]TreeEntry, len(sts))
	for i, st := range sts {
		es[i] = st.TreeEntry()
		if !es[i].Dir {
			continue
		}
		other, err := d.Elsewhere(st.Name)
		if err != nil {
			return nil, err
		}
		if other {
			es[i].Skip = "another file system mounted there; not entered"
		}
	}
	return es, nil
}

// listStats is the stat of each entry of d, no link followed, in the order of their names.
func listStats(d FileDir) ([]FileStat, error) {
	names, err := d.Names()
	if err != nil {
		return nil, err
	}
	sts := make([]FileStat, 0, len(names))
	for _, n := range names {
		st, err := d.Stat(n)
		if err != nil {
			return nil, err
		}
		sts = append(sts, st)
	}
	return sts, nil
}

// ReadFileFolder reads the folder name of dirs' top as FileFolder.Entries holds it: the folder's
// own stat, read before it is opened (so that one closed even to the user is read, and its mode
// named) and again as opened, then each entry's. What it read comes with an error.
func ReadFileFolder(dirs FileDirs, name string) ([]FileStat, error) {
	top, err := dirs.OpenDir(".", false)
	if err != nil {
		return nil, err
	}
	var sts []FileStat
	if st, err := top.Stat(name); err == nil && st.Type == fs.ModeDir {
		st.Name = ""
		sts = append(sts, st)
	}
	top.Close()
	d, err := dirs.OpenDir(name, false)
	if err != nil {
		return sts, err
	}
	defer d.Close()
	ents, err := StatFileFolder(d)
	if ents == nil {
		return sts, err
	}
	return ents, err // the stat as opened replaces the one before
}

// StatFileFolder reads the open folder d as FileFolder.Entries holds it, where its mode before
// the open is not wanted (verify, whose open of a folder closed to the user fails anyway): its
// own stat, then each entry's. What it read comes with an error.
func StatFileFolder(d FileDir) ([]FileStat, error) {
	self, err := d.Stat("")
	if err != nil {
		return nil, err
	}
	ents, err := listStats(d)
	return append([]FileStat{self}, ents...), err
}
