package store

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// The listing and the sweep of a store kept as folders (the local store), written once over the
// primitives of its folders (SweepFolders): docs/store.md's "The lock". The sweep holds the
// one-sweep lock for its whole run and the lock a use takes shared, exclusively, for one batch at
// a time; a doomed entry's folder is renamed into the trash under that lock and removed outside
// it, nothing followed. The trash is on the store's file system, so that the rename is one rename
// and the removal walks no other file system; what a crashed sweep left there is removed first.

// SweptFolder names one of the folders of a store kept as folders that its sweep works in.
type SweptFolder int

const (
	StoreFolder    SweptFolder = iota // the store's own: the finished uploads
	PartialsFolder                    // the partials': the unfinished uploads
	TrashFolder                       // the trash: what a sweep set aside, until it is removed
)

// folderBatch is how many candidates are decided per hold of the lock against uses.
const folderBatch = 256

// SweepFolders is a store kept as folders, open for one listing or one sweep. Its errors are
// coded by the backend, and keep the system's error they code (errors.Is).
type SweepFolders interface {
	// Open opens the store's folder and its partials' folder, making nothing: false when the
	// store is not there. A partials' folder that is not there lists nothing.
	Open() (there bool, err error)
	// Path is the path of name in the folder f ("": the folder's own), for messages.
	Path(f SweptFolder, name string) string
	// List lists the folder f, sorted by name, each entry typed as it is (no link followed):
	// nothing when f is not open.
	List(f SweptFolder) ([]TopEntry, error)
	// OpenUpload opens the folder of the finished upload id, never following a link: not there
	// is upload.missing; a link or a file in its place is an error that is ENOTDIR or ELOOP.
	OpenUpload(id string) (SweptUpload, error)
	// ReadPartial reads the unfinished upload id as ListBackend.ReadPartial does; with hold, its
	// writer's lock is taken when it is free and held until release (nil: none was taken).
	// Something else in its folder's place is ENOTDIR or ELOOP, as for OpenUpload.
	ReadPartial(id string, hold bool) (st UnfinishedState, release func(), err error)
	// Has reports whether the store's folder holds an entry id, whatever it is.
	Has(id string) bool
	// LockSweep takes the one-sweep lock, waiting at most wait, until unlock.
	LockSweep(wait time.Duration) (unlock func() error, err error)
	// ExcludeUses takes the lock a use of an upload holds shared, exclusively, until release.
	ExcludeUses() (release func(), err error)
	// OpenTrash opens the trash, made when it is missing, and reports whether it is on the
	// store's file system.
	OpenTrash() (same bool, err error)
	// Move renames the entry name of the folder from into the folder to, under the same name, in
	// one rename that replaces nothing.
	Move(from, to SweptFolder, name string) error
	// Remove removes the entry name of the folder f: in the trash, with all it holds, never
	// following a link nor entering another file system; in the partials', the partial folder a
	// finish killed after its rename left (only an info.json). Not there is no error.
	Remove(f SweptFolder, name string) error
	// PruneIndex drops what the store keeps of uploads it no longer holds, after a sweep that
	// removed: best effort.
	PruneIndex()
	// Close closes what Open and OpenTrash opened.
	Close()
}

// SweptUpload is the folder of a finished upload, open (SweepFolders.OpenUpload).
type SweptUpload interface {
	// ReadMeta reads its metadata through the guarded reads (UploadMeta without LastUsed and
	// ForeignMarker).
	ReadMeta() (*UploadMeta, error)
	// LastUsed reads its use marker: zero when it has none; foreign when the store did not
	// write it.
	LastUsed() (at time.Time, foreign bool, err error)
	Close()
}

// ListFolders is Backend.List of the store f (ListOn), its folders listed and read by jobs at
// once; f is closed after.
func ListFolders(ctx context.Context, f SweepFolders, jobs int) (*Listing, error) {
	defer f.Close()
	return ListOn(ctx, folderList{f, jobs})
}

// folderList is a store kept as folders as a ListBackend.
type folderList struct {
	f    SweepFolders
	jobs int
}

func (l folderList) ListProperties() ListProperties { return ListProperties{Jobs: l.jobs} }

func (l folderList) ListTop(context.Context) ([]TopEntry, string, bool, error) {
	where := l.f.Path(StoreFolder, "")
	if there, err := l.f.Open(); !there || err != nil {
		return nil, where, false, err
	}
	top, err := l.f.List(StoreFolder)
	return top, where, err == nil, err
}

// ReadUpload reads a finished upload's metadata and marker; whatever keeps it from reading as an
// upload is skipped, never the listing's failure.
func (l folderList) ReadUpload(_ context.Context, c Candidate) (*UploadMeta, error) {
	m, err := l.readUpload(c.ID)
	if err != nil {
		return nil, fault.Errorf(fault.UploadUnreadable, "%s", fault.AsError(err, fault.UploadUnreadable).Message)
	}
	return m, nil
}

func (l folderList) readUpload(id string) (*UploadMeta, error) {
	u, err := l.f.OpenUpload(id)
	if err != nil {
		return nil, err
	}
	defer u.Close()
	m, err := u.ReadMeta()
	if err == nil {
		m.LastUsed, m.ForeignMarker, err = u.LastUsed()
	}
	return m, err
}

func (l folderList) ListPartials(context.Context) ([]TopEntry, string, error) {
	top, err := l.f.List(PartialsFolder)
	return top, l.f.Path(PartialsFolder, ""), err
}

func (l folderList) ReadPartial(_ context.Context, id string) (UnfinishedState, error) {
	st, _, err := l.f.ReadPartial(id, false)
	return st, err
}

// SweepFolder opens the store f for a sweep (a partial begun after this is not stale yet: Recheck
// finds it gone), takes the one-sweep lock, waiting at most wait, and opens the trash, emptied of
// what a crashed sweep left. A dry run takes nothing (it writes nothing, the lock included); a
// store that does not exist has nothing to sweep. Jobs entries are removed at once.
func SweepFolder(f SweepFolders, jobs int, wait time.Duration, dry bool) (*FolderSweeper, error) {
	sw := &FolderSweeper{folderList: folderList{f, jobs}, dry: dry}
	there, err := f.Open()
	sw.there = there
	if err == nil && there && !dry {
		if sw.unlock, err = f.LockSweep(wait); err == nil {
			err = sw.openTrash()
		}
	}
	if err != nil {
		sw.Close()
		return nil, err
	}
	return sw, nil
}

// FolderSweeper is a running sweep of a store kept as folders, its Sweeper and SweepBackend: it
// holds the one-sweep lock and the store's folders until Close.
type FolderSweeper struct {
	folderList
	dry, there bool
	unlock     func() error // nil: no lock held
}

// openTrash opens the trash and removes what a crashed sweep left there. A trash on another file
// system is refused before anything is removed: no rename reaches it.
func (sw *FolderSweeper) openTrash() error {
	same, err := sw.f.OpenTrash()
	if err != nil {
		return err
	}
	if !same {
		return fault.Errorf(fault.UploadUnreadable, "store %s: its trash is on another file system; nothing removed", sw.f.Path(StoreFolder, ""))
	}
	// What cannot be removed stays for the next sweep.
	names, err := sw.f.List(TrashFolder)
	if err == nil {
		for _, n := range names {
			sw.f.Remove(TrashFolder, n.Name)
		}
	}
	return nil
}

// Close releases the sweep lock and the folders.
func (sw *FolderSweeper) Close() error {
	sw.f.Close()
	if unlock := sw.unlock; unlock != nil {
		sw.unlock = nil
		return unlock()
	}
	return nil
}

// Remove is Sweeper's Remove, the re-check written once (SweepRemove) over the primitives below;
// after a sweep that removed, the store's index is pruned.
func (sw *FolderSweeper) Remove(ctx context.Context, cands []Entry, stale func(Entry) bool, each func(Entry, Outcome, error) error) error {
	if !sw.there || len(cands) == 0 {
		return ctx.Err()
	}
	if err := SweepRemove(ctx, sw, sw.dry, cands, stale, each); err != nil || sw.dry {
		return err
	}
	sw.f.PruneIndex()
	return nil
}

func (sw *FolderSweeper) SweepProperties() SweepProperties {
	return SweepProperties{Batch: folderBatch, Jobs: sw.jobs, Undo: true}
}

// Exclude takes the lock of the uses exclusive: a use waits for one batch at most.
func (sw *FolderSweeper) Exclude(context.Context) (func(), error) {
	return sw.f.ExcludeUses()
}

// Recheck reads a finished upload's marker, or an unfinished upload's data file, taking its
// writer's lock: held until the entry is renamed, so no chunk lands in a folder on its way out.
// An entry whose folder a link or a file replaced since the listing is no upload any more: gone,
// as the listing would skip it now.
func (sw *FolderSweeper) Recheck(_ context.Context, c Entry) (Reread, error) {
	where := sw.f.Path(StoreFolder, "")
	if c.Finished {
		u, err := sw.f.OpenUpload(c.ID)
		if replaced(err) {
			return Reread{}, NotFinished(c.ID, where)
		} else if err != nil { // not there: upload.missing, gone
			return Reread{}, err
		}
		defer u.Close()
		used, _, err := u.LastUsed()
		return Reread{Used: used}, err
	}
	st, release, err := sw.f.ReadPartial(c.ID, true)
	if replaced(err) {
		return Reread{}, NotUnfinished(c.ID, where)
	}
	// Finished since it was listed: what is left of the partial is the finish's leftover, not an
	// upload to report (the finished upload is judged as one on the next sweep). A finish renames
	// its folder into the store before the partial's data goes, so this look, after the one at
	// the data, cannot miss it.
	if err == nil && sw.f.Has(c.ID) {
		err = NotUnfinished(c.ID, where)
	}
	return Reread{State: st, Release: release}, err
}

// replaced reports whether opening an entry's folder failed because a link or a file stands in
// its place.
func replaced(err error) bool {
	return errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ELOOP)
}

// home is the folder that keeps the entry's folder.
func home(e Entry) SweptFolder {
	if e.Finished {
		return StoreFolder
	}
	return PartialsFolder
}

// Doom renames the entry's folder into the trash, in one rename, under its id: no two entries of
// a sweep have one id (a partial beside the finished upload of its id is no entry).
func (sw *FolderSweeper) Doom(_ context.Context, it *SweepItem) error {
	if err := sw.f.Move(home(it.Entry), TrashFolder, it.Entry.ID); err != nil {
		return fmt.Errorf("%s: moving into the trash: %w", sw.f.Path(home(it.Entry), it.Entry.ID), err)
	}
	return nil
}

// Restore moves a doomed entry back from the trash to its place, as if the sweep had not chosen it.
func (sw *FolderSweeper) Restore(it *SweepItem) {
	sw.f.Move(TrashFolder, home(it.Entry), it.Entry.ID)
}

// Drop removes a doomed entry from the trash. The last use Recheck read is the folder's last: it
// read it under the lock against uses, which no use writes without, and after Doom no use finds it.
func (sw *FolderSweeper) Drop(_ context.Context, it *SweepItem) error {
	if err := sw.f.Remove(TrashFolder, it.Entry.ID); err != nil {
		return fault.Errorf(fault.UploadUnreadable, "%s: removing upload %s: %v (left in the trash)", sw.f.Path(TrashFolder, it.Entry.ID), it.Entry.ID, err)
	}
	return nil
}

// DropLeftover removes the partial folder a finish killed after its rename left beside the
// finished upload of its id: only an info.json (the listing finds no other leftover here).
func (sw *FolderSweeper) DropLeftover(_ context.Context, l Leftover) error {
	return sw.f.Remove(PartialsFolder, l.ID)
}
