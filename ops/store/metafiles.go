package store

// Metadata files: the metadata of the small uploads one commit of a batch publishes, kept as one
// file for the commit (the local store's .attachctl/meta/<bid>.<n>) instead of one per upload.
// What is written once here: the file's name and form, how a file is read (a damaged line damages
// the whole file; an id two files name is damaged), what a process remembers of what it read, and
// which files a sweep may remove. The backend keeps the folder: listing it, reading a file through
// its guarded open, writing, renaming and removing one. docs/store.md (meta/) tells the order a
// commit writes and places a file in.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/attachctl/attachctl/manifest/fault"
)

// MetaFileName is the name of the nth file of the batch whose staging partial is bid (unique to
// the batch).
func MetaFileName(bid string, n int64) string { return fmt.Sprintf("%s.%d", bid, n) }

// MetaFileBatch is the batch's staging partial named by a file name of the folder, or "" for a
// name that is no metadata file's.
func MetaFileBatch(name string) string {
	bid, _, ok := strings.Cut(name, ".")
	if !ok || ValidID(bid) != nil {
		return ""
	}
	return bid
}

// EncodeMetaLine is m as one line of a metadata file (one Info a line).
func EncodeMetaLine(m *Info) []byte {
	line, _ := json.Marshal(m)
	return append(line, '\n')
}

// DecodeMetaFile reads a metadata file; any line that is not the metadata of an upload of this
// store (an upload id, and what Recognize asks of every upload's) makes the whole file damaged (an
// error), so that no upload is named by half a file. Blank lines are skipped.
func DecodeMetaFile(b []byte) ([]*Info, error) {
	var ms []*Info
	for len(b) > 0 {
		line, rest, _ := bytes.Cut(b, []byte{'\n'})
		b = rest
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var m Info
		err := json.Unmarshal(line, &m)
		if err = cmp.Or(err, ValidID(m.ID), Recognize(m.ID, m.ID, false, &m)); err != nil {
			return nil, err
		}
		ms = append(ms, &m)
	}
	return ms, nil
}

// A StagedMeta is the metadata file of the uploads a batch holds, not yet taken by a commit,
// written in the batch's staging partial as they are built: an upload's line is written before
// it counts as built (MetaFiles.Join, under the batch's lock), so that the room its metadata
// takes is taken while its own bytes are, and the commit that publishes it writes no new byte.
// Were the file written by the commit, the builds of the next batch (or any other writer) could
// fill the disk meanwhile, and uploads whose bytes were all written would fail for want of their
// metadata's room. The line of an upload that fails after it was written stays: it names an id
// no folder of the store will have (a failed staged upload goes with the staging partial), which
// no reader looks up.
type StagedMeta struct {
	Name string // MetaFileName
	w    MetaFileWrite
	size int64 // the bytes of the whole lines written
}

// MetaFileWrite is the backend's side of a StagedMeta: the file, made new and empty in the
// staging partial and open for writing (an *os.File is one), its path for messages, Code that
// gives a failure of it its fault code, Remove that removes it, and Publish that places it,
// sealed, in the folder of metadata files, durably.
type MetaFileWrite struct {
	File interface {
		WriteAt(b []byte, off int64) (int, error) // all of b, or an error
		Truncate(size int64) error
		Sync() error
		Close() error
	}
	Path    string
	Sync    bool // each file is made durable on its own (Seal), not with the commit's
	Code    func(path string, err error) error
	Remove  func()
	Publish func() error
}

// MetaFiles numbers the files of a batch's commits (MetaFileName); used under the batch's lock.
type MetaFiles struct{ n int64 }

// Join writes m's line into the pending file *x of the batch whose staging partial is bid,
// making the file (create) at the first staged upload of a commit: in the same hold of the
// batch's lock as the upload joins the commit (GroupCommitter.BatchJoin), so that the file a
// commit takes holds the lines of the uploads it takes and no other. A file left empty by a
// failure is closed and not kept for the commit (it goes with the staging partial).
func (c *MetaFiles) Join(x **StagedMeta, bid string, m *Info, create func(name string) (MetaFileWrite, error)) error {
	if *x == nil {
		c.n++
		name := MetaFileName(bid, c.n)
		w, err := create(name)
		if err != nil {
			return err
		}
		*x = &StagedMeta{Name: name, w: w}
	}
	if err := (*x).Add(m); err != nil {
		if (*x).size == 0 {
			(*x).w.File.Close()
			*x = nil
		}
		return err
	}
	return nil
}

// Add writes m's line. On failure (a full disk) the file is cut back to the lines it held, so
// that it never holds part of a line, and m is not in it.
func (x *StagedMeta) Add(m *Info) error {
	line := EncodeMetaLine(m)
	if _, err := x.w.File.WriteAt(line, x.size); err != nil {
		x.w.File.Truncate(x.size)
		return x.w.Code(x.w.Path, err)
	}
	x.size += int64(len(line))
	return nil
}

// Seal closes the file, which is complete (PublishSteps.Seal); it is made durable here only
// where each file is on its own, else by the commit's flush with the uploads. On failure it is
// removed.
func (x *StagedMeta) Seal() (err error) {
	if x.w.Sync {
		err = x.w.File.Sync()
	}
	if cerr := x.w.File.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		x.w.Remove()
		return x.w.Code(x.w.Path, err)
	}
	return nil
}

// Publish places the sealed file in the folder of metadata files (PublishSteps.Share): from
// there the metadata is durable in its place, and the uploads it names may be placed.
func (x *StagedMeta) Publish() error { return x.w.Publish() }

// MetaFolder is the folder of metadata files as the backend lists it for one reading: the names
// in it, a read of one of them through the backend's guarded open (an error: the file is not the
// store's own, or cannot be read now), and a removal of one (PruneMetaFiles; a failure leaves it
// for the next sweep).
type MetaFolder struct {
	Names  []string
	Read   func(name string) ([]byte, error)
	Remove func(name string)
}

// readFile reads and decodes the file name of f.
func (f MetaFolder) readFile(name string) ([]*Info, error) {
	b, err := f.Read(name)
	if err != nil {
		return nil, err
	}
	return DecodeMetaFile(b)
}

// MetaIndex is what a process has read of a store's metadata files. An upload's metadata never
// changes, so what was read stays true; a lookup that misses reads the files made since. A file
// that cannot be read, or is damaged, names nothing, and is read again on the next miss. Its zero
// value is an empty index, safe for concurrent use.
type MetaIndex struct {
	mu   sync.Mutex
	byID map[string]*Info // nil: named by two files (damaged)
	read map[string]bool  // files read
}

// Lookup returns the metadata the files hold for upload id: ok false when no file names it, m
// nil when two do (the upload is damaged). list lists the folder (ok false: it is not there, or
// cannot be listed; done is called once the reading ends).
func (x *MetaIndex) Lookup(id string, list func() (f MetaFolder, done func(), ok bool)) (m *Info, ok bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if m, ok = x.byID[id]; ok {
		return m, true
	}
	if x.byID == nil {
		x.byID, x.read = map[string]*Info{}, map[string]bool{}
	}
	f, done, listed := list()
	if !listed {
		return nil, false
	}
	defer done()
	for _, name := range f.Names {
		if x.read[name] || MetaFileBatch(name) == "" {
			continue
		}
		ms, err := f.readFile(name)
		if err != nil {
			continue
		}
		x.read[name] = true
		for _, m := range ms {
			if _, twice := x.byID[m.ID]; twice {
				x.byID[m.ID] = nil
				continue
			}
			x.byID[m.ID] = m
		}
	}
	m, ok = x.byID[id]
	return m, ok
}

// Find is what the files say of upload id, whose folder holds no metadata file of its own: its
// metadata when one file names it; else, when none does, no finished upload (UploadMissing: what
// a folder without metadata always was), and when two do, a damaged upload (UploadUnreadable).
// dir is the upload's folder, own the name of its missing metadata file and folder the folder of
// the files, for messages; list is Lookup's.
func (x *MetaIndex) Find(id, dir, own, folder string, list func() (MetaFolder, func(), bool)) (*Info, error) {
	switch m, ok := x.Lookup(id, list); {
	case ok && m != nil:
		return m, nil
	case ok:
		return nil, fault.Errorf(fault.UploadUnreadable, "upload %s: %s: no %s, and two files of %s name it; the upload is damaged",
			id, dir, own, folder)
	}
	return nil, fault.Errorf(fault.UploadMissing, "upload %s: %s: not a finished upload in this store (no %s, and no file of %s names it)",
		id, dir, own, folder)
}

// PruneMetaFiles removes each file of f that names no upload in the store any more and
// whose batch has ended (its staging partial is gone: a batch places its uploads while its partial
// is there). f is to be listed first, then the partials, then the store's uploads, the order a
// batch makes things in (its partial, then its file, then its uploads), so that a batch running
// meanwhile keeps its file. A sweep calls it under its lock, after removing uploads; a file that
// cannot be read is kept, and every file when partials or uploads cannot be listed (the next
// sweep prunes them).
func PruneMetaFiles(f MetaFolder, partials, uploads func() ([]string, error)) {
	if len(f.Names) == 0 {
		return // no listing of the store for a folder with nothing to prune
	}
	var in [2][]string
	for i, list := range []func() ([]string, error){partials, uploads} {
		names, err := list()
		if err != nil {
			return
		}
		in[i] = names
	}
	batches, ups := setOf(in[0]), setOf(in[1])
	for _, name := range f.Names {
		bid := MetaFileBatch(name)
		if bid == "" || batches[bid] {
			continue
		}
		ms, err := f.readFile(name)
		if err == nil && !slices.ContainsFunc(ms, func(m *Info) bool { return ups[m.ID] }) {
			f.Remove(name)
		}
	}
}

// setOf is names as a set.
func setOf(names []string) map[string]bool {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set
}
