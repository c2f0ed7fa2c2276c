package store

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// An unfinished upload that a backend keeps as a folder of its own (the local store's
// .attachctl/partial/<id>/) holds its info (PartialMeta), a data file its writer locks, and, while
// a finish moves that file out of it, out/<name>: the data file renamed, read-only, before the
// finished folder goes into the store. How such a folder is read (ReadPartFolder), locked by its
// writer (LockPartFolder) and read for the listing, the sweep and Status (ReadPartial) is written
// here once, over what the backend does to the folder (PartFolder): open an entry by name never
// following a link, stat it, try its lock, tell whether it is still the one at its name, rename
// it back.

// PartFolder is one opening of the folder of an unfinished upload by its backend, never through
// a link. Its errors are the system's (not there: one fs.ErrNotExist matches).
type PartFolder interface {
	// Info reads its info file.
	Info() (*PartialMeta, error)
	// Open opens the file its writer locks, never through a link nor blocking: data (out "",
	// for writing when write is set), else out/<out> for reading only; path is that file's, for
	// messages, even when it failed, and "" when out/ is no folder it opens.
	Open(out string, write bool) (path string, err error)
	// Stat is the stat of the file opened, else of the folder.
	Stat() (FileStat, error)
	// Lock takes the writer's lock on the file opened, waiting for it when wait is set: busy
	// when another process holds it (only without waiting).
	Lock(wait bool) (busy bool, err error)
	// Still reports whether the file opened is still the one at its name, and the folder still
	// the upload's.
	Still() bool
	// Unfinish makes the file opened as out/<name> writable and renames it back to data; its
	// error is coded.
	Unfinish() error
	// DropOut removes out/, what a crashed finish left, best effort.
	DropOut()
	// Tree is what the files of a folder upload's tree hold and when the newest was written
	// (TreeBytes); ok is false when the folder holds no tree.
	Tree() (n int64, newest time.Time, ok bool)
	// Keep detaches the file opened, and so its lock, from Close: release drops it.
	Keep() (release func())
	// Close closes what the opening holds, and so drops a lock taken.
	Close()
}

// PartRead is one reading of an unfinished upload's folder (ReadPartFolder): its state for the
// listing's rules; its info (Meta, nil when unreadable: MetaErr, and the listing and the sweep
// read the partial all the same); the file its writer locks (File; Out when that is out/<name>),
// at Path (the folder's, Dir, until that is open, so that an error opening it names it), and that
// file's stat (Links 0 when it has none); Release, when a reader kept the writer's lock.
type PartRead struct {
	UnfinishedState
	Dir, Path string
	Meta      *PartialMeta
	MetaErr   error
	File, Out bool
	Stat      FileStat
	Release   func()
}

// ErrPartGone: the file a partial's writer locks has no link left: finished, aborted or swept
// while it was read (OwnPartial).
var ErrPartGone = errors.New("no link left")

// ReadPartFolder reads the unfinished upload id, open as f at dir, the one reading of such a
// folder, for its readers (ReadPartial) and its writer (LockPartFolder): its info, and the file
// its writer locks (data, opened for writing when write is set, or out/<name> while a finish
// moves it), or the folder's time when it has none. check judges what was read, the file by its
// stat before the lock is taken and again after it; without wait a writer holding it makes the
// upload busy. The error is the system's, or check's.
func ReadPartFolder(f PartFolder, dir string, write, wait bool, check func(*PartRead) error) (*PartRead, error) {
	r := &PartRead{Dir: dir, Path: dir}
	if r.Meta, r.MetaErr = f.Info(); r.MetaErr == nil {
		r.Name, r.Made, r.Batch = r.Meta.Name, r.Meta.Created, r.Meta.Batch
	}
	var err error
	r.Path, err = f.Open("", write)
	if errors.Is(err, fs.ErrNotExist) && r.Name != "" {
		// Between a finish's two renames (a finish that crashed, or runs now) the file is
		// out/<name>, opened for reading only: the finish made it read-only, and whoever undoes the
		// finish writes it as data.
		if path, oerr := f.Open(r.Name, false); path != "" {
			r.Path, err, r.Out = path, oerr, true
		}
	}
	if errors.Is(err, fs.ErrNotExist) { // no data: a partial just begun, or what a crash left
		r.Out = false
		st, err := f.Stat()
		if err == nil {
			r.Written = st.At
			err = check(r)
		}
		return r, err
	}
	r.File = err == nil
	stat := func() error {
		st, err := f.Stat()
		if err != nil {
			return err
		}
		r.Stat, r.Bytes, r.Written = st, st.Size, st.At
		return check(r)
	}
	if err == nil {
		err = stat()
	}
	if err != nil {
		return r, err
	}
	if r.Busy, err = f.Lock(wait); err != nil {
		return r, err
	}
	return r, stat()
}

// OwnPartial is the check of a partial read for its writer and for Status (ReadPartFolder): its
// info read (not there: upload.missing), its file there and still linked (ErrPartGone when it has
// no link left), and one of the store's own files (OwnFileWhy); before the wait too, so that a
// file planted by another user makes no one wait.
func OwnPartial(id string) func(*PartRead) error {
	return func(r *PartRead) error {
		switch {
		case r.MetaErr != nil: // no info (not there) is upload.missing (LockPartFolder, Status)
			return fault.Errorf(fault.UploadUnreadable, "upload %s: %s: %w", id, r.Dir, r.MetaErr)
		case !r.File:
			return fs.ErrNotExist
		case r.Stat.Links == 0:
			return ErrPartGone
		}
		if why := OwnFileWhy(r.Stat); why != "" {
			return fault.Errorf(fault.UploadUnreadable, "upload %s: %s: %s", id, r.Path, why)
		}
		return nil
	}
}

// RegularPartial is the check of a partial read for the listing and the sweep (ReadPartFolder),
// which read it whatever its info says: only a regular file is read.
func RegularPartial(r *PartRead) error {
	if r.File && r.Stat.Type != 0 {
		return errors.New("data is not a regular file")
	}
	return nil
}

// ReadPartial reads the unfinished upload id of the store where, opened by open, for the listing,
// the sweep and Status, which wait for no writer (ReadPartFolder, checked by check): a writer
// holding the lock makes the upload busy. A folder upload's bytes are its tree's (PartFolder.Tree).
// With keep set, the writer's lock is taken and kept when free: Release drops it. What the
// opening holds is closed. One that is not there (no folder or data of its own, a file with no
// link left: finished, aborted or swept since) is upload.missing, which each engine reads as gone.
// Something else in its folder's place (a link, a file) is the caller's to judge.
func ReadPartial(id, where, dir string, keep bool, open func() (PartFolder, error), check func(*PartRead) error) (*PartRead, error) {
	r := &PartRead{Dir: dir, Path: dir}
	f, err := open()
	if err == nil {
		defer f.Close()
		r, err = ReadPartFolder(f, dir, false, false, check)
	}
	// A folder upload's data file is only its lock: the bytes are in its tree (which tells one
	// whose info is gone), and it was last written when the newest of them was.
	if err == nil && r.File && (r.Meta != nil && r.Meta.Folder || r.Meta == nil) {
		if n, newest, ok := f.Tree(); ok || r.Meta != nil {
			r.Tree(n, newest)
		}
	}
	if err == nil && keep && r.File && !r.Busy {
		r.Release = f.Keep()
	}
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrPartGone) {
		err = fault.Errorf(fault.UploadMissing, "upload %s: no such upload in store %s", id, where)
	}
	return r, err
}

// LockPartFolder opens the unfinished upload id of the store where (open: its folder at dir, never
// through a link) and takes its writer's lock, waiting for it when wait is set (else busy is an
// error: the caller takes another partial or makes one), its file opened for writing and checked
// by OwnPartial before the wait and again after it. A finish that crashed after moving data to
// out/<name> is undone here: out/<name> is the same file, locked the same way, and goes back to
// data. The folder is returned open and locked, out/ gone, with its info read again under the
// lock (the holder before may have rewritten it). Not there: upload.missing (NotUnfinished);
// code codes a system error by the path that failed.
func LockPartFolder(id, where, dir string, wait bool, open func() (PartFolder, error), code func(path string, err error) error) (PartFolder, *PartialMeta, error) {
	for try := 0; try < 10; try++ {
		f, meta, retry, err := lockPartFolder(id, dir, wait, open, code)
		switch {
		case retry:
			continue
		case fault.CodeOf(err) == fault.UploadMissing || errors.Is(err, fs.ErrNotExist):
			return nil, nil, NotUnfinished(id, where)
		}
		return f, meta, err
	}
	return nil, nil, fault.Errorf(fault.UploadUnreadable, "upload %s: keeps changing under us", id)
}

// ErrPartBusy: another process holds the writer's lock (LockPartFolder without waiting).
var ErrPartBusy = errors.New("held by another process")

// lockPartFolder is one try of LockPartFolder.
func lockPartFolder(id, dir string, wait bool, open func() (PartFolder, error), code func(path string, err error) error) (PartFolder, *PartialMeta, bool, error) {
	f, err := open()
	if err != nil {
		return nil, nil, false, code(dir, err)
	}
	held := false
	defer func() {
		if !held {
			f.Close()
		}
	}()
	r, err := ReadPartFolder(f, dir, true, wait, OwnPartial(id))
	switch {
	case errors.Is(err, ErrPartGone):
		return nil, nil, true, nil
	case err == nil && r.Busy:
		err = ErrPartBusy
	}
	if err != nil {
		return nil, nil, false, code(r.Path, err)
	}
	// Still the file at that name, and the folder still the partial (a sweep may have moved it
	// into the trash while we waited)?
	if !f.Still() {
		return nil, nil, true, nil
	}
	if r.Out {
		// Ours, and still the crashed finish's out/<name> (a finish holds the lock until its upload
		// is placed): unfinished again, writable, and data again, opened for writing on the next
		// try.
		err := f.Unfinish()
		return nil, nil, err == nil, err
	}
	f.DropOut()
	meta, err := f.Info()
	if err != nil {
		return nil, nil, false, fault.Errorf(fault.UploadUnreadable, "upload %s: %s: %v", id, r.Dir, err)
	}
	held = true
	return f, meta, false, nil
}

// BeginPartialWith makes a new unfinished upload of the info m, begun now unless m says when (as
// PartialTaker.BeginPartial does), as make makes one under the id it is given, and returns it held.
// The upload is admitted against the store's limits q before anything is made, and its admission
// released when it cannot be made.
func BeginPartialWith[P any](q *Quota, m PartialMeta, make func(id string, m PartialMeta) (P, error)) (P, error) {
	id, release, err := q.AdmitNew(context.Background(), m.Name, m.Size)
	if err != nil {
		var none P
		return none, err
	}
	if m.Created.IsZero() {
		m.Created = time.Now().UTC()
	}
	p, err := make(id, m)
	if err != nil {
		release()
	}
	return p, err
}
