package store

import (
	"context"
	"os"
)

// A finished upload built as a folder (docs/store.md: how a finish publishes), the one way for
// every kind of upload of a backend that keeps uploads as folders of files, written once over the
// folders it keeps open (OutDir): a new folder made where the upload is built, its files (its
// metadata, a folder upload's listing, a small upload's bytes) written new and read-only, then
// what an unfinished upload holds (its data, made read-only first, or its tree) moved in under
// the upload's name. Nothing is made durable by the build: the commit does (Sync, then Place, by
// the order of Publish). What is undone: a build from an unfinished upload is taken apart whole,
// its payload moved back and writable again, so that it is an unfinished upload again as a crash
// would have left it; a build in a batch's staging area, which holds nothing else of the upload,
// is removed when the build fails, and else left there, to go with the staging area.

// OutDir is an open folder of a store kept as files. Its errors are coded by the backend.
type OutDir interface {
	// Mkdir makes the new folder name in it (DirMode, whatever the umask), open.
	Mkdir(name string) (OutDir, error)
	// Write makes the new file name in it, never following a link, read-only (ReadOnlyMode)
	// from the start, holding data; kept open for Sync when keep, else closed (nil).
	Write(name string, data []byte, keep bool) (OutFile, error)
	// Rename renames its entry from to name in the folder to.
	Rename(from string, to OutDir, name string) error
	// Place renames its entry from to name in the folder to, which must not have it: never
	// replacing a finished upload.
	Place(from string, to OutDir, name string) error
	// Remove removes what is at name, a file, a link or a folder with all it holds, never
	// following a link.
	Remove(name string) error
	OutFile
}

// OutFile is an open file or folder of a build, made durable by Sync: a plain sync of its own
// (the commit flushes a drive's cache once for all).
type OutFile interface {
	Sync() error
	Close() error
}

// OutData is an unfinished upload's open data file: made read-only as it moves in, and writable
// again (FileMode) by an undo. The unfinished upload owns it: the build never closes it.
type OutData interface {
	Sync() error
	Chmod(mode os.FileMode) error
}

// OutFileData is a file written into a finished folder beside what it holds.
type OutFileData struct {
	Name string
	Data []byte
}

// OutPayload is what an unfinished upload holds that becomes the finished upload's file or
// folder: its name in the unfinished upload's folder, and its data file when it is one (nil: a
// folder, whose files were made read-only as they were written).
type OutPayload struct {
	Name string
	Data OutData
}

// An Out is a finished upload built as a folder and not yet placed. Its methods are the steps
// of a Publish (Sync, Undo, Place) and Release, which closes what it still holds.
type Out struct {
	ID   string
	Meta *Info
	in   OutDir // the folder it was built in
	name string // the folder built, in in
	dir  OutDir // the folder built, while it is open
	keep []OutFile
	from *OutPayload // built from an unfinished upload; nil: in a staging area
}

// BuildOut builds the finished folder of the upload m as name in the folder in: from the
// unfinished upload that in is when from is set (what was left at name by a build killed
// before is removed first), else as a new upload of a staging area. keep keeps the folder and
// the files written open for Sync, where each file is made durable on its own; the folder built
// from an unfinished upload stays open until it is placed, for an undo. On failure what was built
// is taken apart.
func BuildOut(in OutDir, name string, m *Info, keep bool, files []OutFileData, from *OutPayload) (*Out, error) {
	if from != nil {
		in.Remove(name)
	}
	dir, err := in.Mkdir(name)
	if err != nil {
		return nil, err
	}
	o := &Out{ID: m.ID, Meta: m, in: in, name: name, dir: dir, from: from}
	for _, f := range files {
		w, err := dir.Write(f.Name, f.Data, keep)
		if err != nil {
			return nil, o.Unbuild(err)
		}
		if keep {
			o.keep = append(o.keep, w)
		}
	}
	if from == nil {
		if !keep {
			o.closeDir()
		}
		return o, nil
	}
	// The data read-only (its descriptor stays open for writing, so its sync is unaffected),
	// the mode made durable with the rest; an undo, and an opener that finds a killed build,
	// give it its FileMode back.
	if from.Data != nil {
		if err := from.Data.Chmod(ReadOnlyMode); err != nil {
			return nil, o.Unbuild(err)
		}
	}
	if err := in.Rename(from.Name, dir, m.Name); err != nil {
		return nil, o.Unbuild(err)
	}
	return o, nil
}

// Sync makes the upload's data, files and folder durable, all at once (a journaling file system
// commits together what arrives together), and closes its files; a staged upload's folder too,
// as nothing of it is needed before it is placed.
func (o *Out) Sync() error {
	var files []interface{ Sync() error }
	if o.from != nil && o.from.Data != nil {
		files = append(files, o.from.Data)
	}
	if o.dir != nil {
		files = append(files, o.dir)
	}
	for _, f := range o.keep {
		files = append(files, f)
	}
	err := ForEach(context.Background(), len(files), len(files), func(i int) error {
		return files[i].Sync()
	})
	o.closeKept()
	if o.from == nil {
		o.closeDir()
	}
	return err
}

// Undo takes the upload apart after err (PublishSteps.Undo) and returns err: built from an
// unfinished upload, that is one again; staged, it is left in the staging area, closed.
func (o *Out) Undo(err error) error {
	if o.from == nil {
		o.Release()
		return err
	}
	return o.Unbuild(err)
}

// Place renames the folder built to its id in the store's folder store, replacing nothing
// (PublishSteps.Place): published, durable once the store's folder is made so. On failure it is
// taken apart (Undo).
func (o *Out) Place(store OutDir) error {
	if err := o.in.Place(o.name, store, o.ID); err != nil {
		return o.Undo(err)
	}
	o.closeDir()
	return nil
}

// Release closes what the upload still holds.
func (o *Out) Release() {
	o.closeKept()
	o.closeDir()
}

// Unbuild takes the upload apart whole, after err, and returns err: the folder built removed,
// an unfinished upload's payload moved back first and writable again. A staged upload that the
// batch did not take leaves nothing, and what it wrote is room for the others again.
func (o *Out) Unbuild(err error) error {
	o.closeKept()
	if o.from != nil {
		o.dir.Rename(o.Meta.Name, o.in, o.from.Name)
		if o.from.Data != nil {
			o.from.Data.Chmod(FileMode) // unfinished again: writable
		}
	}
	o.closeDir()
	o.in.Remove(o.name)
	return err
}

func (o *Out) closeKept() {
	for _, f := range o.keep {
		f.Close()
	}
	o.keep = nil
}

func (o *Out) closeDir() {
	if o.dir != nil {
		o.dir.Close()
		o.dir = nil
	}
}

// OutCommit is a backend's side of a commit of uploads built as folders (CommitOuts); T is its
// built upload, which holds an Out.
type OutCommit[T any] struct {
	Out func(t T) *Out
	// Flush opens the store's folder, which the uploads are placed in, and makes what was
	// written durable: where one call makes a whole file system durable, a commit is that one
	// call however many uploads it holds; elsewhere (SyncEach) each upload's files are synced
	// first, SyncWidth uploads at once, and Flush flushes the drive once. It returns the folder
	// it opened even when it fails to flush, for it to be closed.
	Flush     func() (OutDir, error)
	SyncEach  bool
	SyncWidth int
	// Placed makes the places in the store's folder durable.
	Placed func(dir OutDir) error
	// Begin, End, Done and Quota are PublishSteps'; Release closes what t still holds, once the
	// commit is over, whatever happened.
	Begin   func() bool
	End     func()
	Done    func(t T)
	Release func(t T)
	Quota   *Quota
}

// CommitOuts publishes ts, built as folders, by the order of Publish, and returns each one's
// error (nil: finished). shared is the metadata file of the staged ones among them, written as
// they were built (nil: none): the commit writes no new byte, so a disk that filled since they
// were built fails none of them; it is made durable with them and placed before any of them is.
func CommitOuts[T any](ts []T, shared *StagedMeta, c OutCommit[T]) []error {
	defer func() {
		for _, t := range ts {
			c.Release(t)
		}
	}()
	var dir OutDir // the store's folder, opened by the flush
	defer func() {
		if dir != nil {
			dir.Close()
		}
	}()
	steps := PublishSteps[T]{
		Shared: func(t T) bool { return c.Out(t).from == nil },
		Flush: func() (err error) {
			dir, err = c.Flush()
			return err
		},
		Undo:   func(t T, err error) error { return c.Out(t).Undo(err) },
		Begin:  c.Begin,
		End:    c.End,
		Place:  func(t T) error { return c.Out(t).Place(dir) },
		Placed: func() error { return c.Placed(dir) },
		Done:   c.Done,
		Quota:  c.Quota,
		ID:     func(t T) string { return c.Out(t).ID },
	}
	if c.SyncEach {
		steps.Sync, steps.SyncWidth = func(t T) error { return c.Out(t).Sync() }, c.SyncWidth
	}
	if shared != nil {
		steps.Seal, steps.Share = shared.Seal, shared.Publish
	}
	return Publish(ts, steps)
}
