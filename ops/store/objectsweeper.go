package store

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// The sweep and the uses of a store whose uploads are objects (ObjectUploads), written once: where
// there is no lock a process can hold, a sweep holds a lease so that only one runs, and a use and
// a sweep's removal race on the upload's marker, each with a conditional write (ObjectRemoval,
// WriteUseOn).

// Sweep takes the store's sweep lease (a Lease over o, written for lease at a time and renewed
// while the sweep runs) and returns the Sweeper. A dry run, and a sweep of a store not there, hold nothing.
func (u *ObjectUploads) Sweep(ctx context.Context, r ObjectRemoval, o LeaseObjects, lease, wait time.Duration, dry bool) (Sweeper, error) {
	ok, err := u.Check(ctx)
	if err != nil {
		return nil, err
	}
	sw := &ObjectSweeper{u: u, r: r, dry: dry}
	if !ok || dry {
		return sw, nil
	}
	sw.lock = NewLease(o, u.Loc, "sweep", lease, false)
	if err := sw.lock.Take(ctx, wait, 10*time.Millisecond, time.Second, " (another sweep or rm is running)", "that sweep"); err != nil {
		return nil, err
	}
	return sw, nil
}

// ObjectSweeper is the Sweeper of a store whose uploads are objects (ObjectUploads.Sweep). A
// finished upload is removed only after its marker was replaced by a tombstone with a conditional
// write that won: a use that wrote first makes the write fail (Kept), a use that comes after
// finds the tombstone. A tombstone cannot be taken back, so a decided removal is finished even
// when the sweep is signalled meanwhile.
type ObjectSweeper struct {
	u    *ObjectUploads
	r    ObjectRemoval
	dry  bool
	lock *Lease // nil when it holds none
}

// Close stops the renewal and lets the lease go.
func (sw *ObjectSweeper) Close() error {
	if sw.lock == nil {
		return nil
	}
	_, err := sw.lock.Unlock(context.Background())
	sw.lock = nil
	return err
}

// Remove is Sweeper's Remove, the re-check written once (SweepRemove).
func (sw *ObjectSweeper) Remove(ctx context.Context, cands []Entry, stale func(Entry) bool, each func(Entry, Outcome, error) error) error {
	return SweepRemove(ctx, sw, sw.dry, cands, stale, each)
}

func (sw *ObjectSweeper) SweepProperties() SweepProperties {
	return SweepProperties{Batch: 1, Jobs: 1}
}

// Exclude holds nothing (the tombstone's conditional write is the exclusion): it stops the sweep
// when its lease was lost (the sweep stalled past its lease and another took the store over).
func (sw *ObjectSweeper) Exclude(context.Context) (func(), error) {
	if sw.lock != nil && sw.lock.Lost() {
		return nil, fault.Errorf(fault.StoreLocked, "store %s: the sweep lock was taken over (this sweep stalled past its lease); stopped", sw.u.Loc)
	}
	return func() {}, nil
}

// unfinishedDoomed is what Recheck learnt of an unfinished entry, for Drop (a finished one's is
// ObjectDoomed).
type unfinishedDoomed struct {
	leftover bool         // a folder upload's files with no info (a sweep killed while removing it)
	di       *DroppedInfo // what an unfinished upload's info names (nil: it has none)
}

// Recheck decides each entry again from what the store holds now: one walk of the id's folder
// shows whether the finished upload is still there (what it holds does not change; its marker is
// read for its last use), or what an unfinished upload wrote there. An unfinished upload finished
// since it was listed is Gone: what is left of it is the finish's, no upload to report; the next
// sweep judges the finished upload and drops the leftover, as the local store looks.
func (sw *ObjectSweeper) Recheck(ctx context.Context, c Entry) (Reread, error) {
	l, err := sw.u.WalkID(ctx, c.ID)
	if err != nil {
		return Reread{}, err
	}
	got := l.Read()
	if !got.Still(c) {
		return Reread{}, NotUnfinished(c.ID, sw.u.Loc)
	}
	if c.Finished {
		return sw.r.RecheckMarked(ctx, c.ID, got.Holds == HoldsFolder)
	}
	un, di, err := sw.u.UnfinishedNow(ctx, c.ID, l, true)
	return Reread{State: un.State, Note: &unfinishedDoomed{di: di, leftover: un.Holds == UnfinishedLeftover}}, err
}

// Doom replaces a finished upload's marker by a tombstone, conditionally (DoomMarked); an
// unfinished upload has no use to race.
func (sw *ObjectSweeper) Doom(ctx context.Context, it *SweepItem) error {
	if d, ok := it.Note.(*ObjectDoomed); ok {
		return sw.r.DoomMarked(ctx, it.Entry.ID, d)
	}
	return nil
}

func (sw *ObjectSweeper) Restore(*SweepItem) {}

// DropLeftover deletes a finish's partial, or a sweep's tombstone left alone (DropTombstone).
// Nothing is written beside a tombstone after the listing: an id's objects are written by its own
// upload, which finished before a sweep wrote the tombstone, and a use finds the tombstone and
// writes nothing.
func (sw *ObjectSweeper) DropLeftover(ctx context.Context, l Leftover) error {
	if l.Partial {
		return sw.r.DropUnfinished(ctx, l.ID, nil)
	}
	return DropTombstone(ctx, sw.r.O, l.ID)
}

// Drop deletes what the entry holds: a finished upload in the order ObjectRemoval keeps, an
// unfinished one's partial then its multipart uploads.
func (sw *ObjectSweeper) Drop(ctx context.Context, it *SweepItem) error {
	id := it.Entry.ID
	switch d := it.Note.(type) {
	case *ObjectDoomed:
		return sw.r.DropFinished(ctx, id, it.Entry.Name, d)
	case *unfinishedDoomed:
		if d.leftover {
			_, err := sw.r.DropTreeObjects(ctx, id)
			return err
		}
		if err := sw.r.DropUnfinished(ctx, id, d.di); err != nil {
			return err
		}
	}
	return sw.r.DropMultiparts(ctx, id)
}

// MarkUsed marks finished uploads used at at, the rules written once (MarkUsedOn): the ids are
// looked up in few listings (LookUpAll: each must be a finished upload whose marker is not a
// tombstone), then each marker is replaced by a conditional write. A write that replaced the
// marker it read proves the upload was there: a sweep deletes only after its tombstone replaced
// that marker. A marker written where there was none may follow a sweep that finished meanwhile,
// so the engine looks at the upload once more, and one that is gone loses the marker again (over
// the marker's own version).
func (u *ObjectUploads) MarkUsed(ctx context.Context, ids []string, at time.Time) error {
	return MarkUsedOn(ctx, objectUses{u}, ids, at)
}

// objectUses is the store as a UseBackend.
type objectUses struct{ u *ObjectUploads }

func (o objectUses) UseProperties() UseProperties {
	return UseProperties{Jobs: o.u.Jobs, Where: o.u.Loc}
}

// HoldUses holds nothing (every marker write is conditional): it checks that the store is one or
// nothing (store.notStore when it holds something else), even with no id to mark.
func (o objectUses) HoldUses(ctx context.Context, ids []string) (func(), error) {
	if _, err := o.u.Check(ctx); err != nil {
		return nil, err
	}
	return func() {}, nil
}

func (o objectUses) LookUpUses(ctx context.Context, ids []string) ([]UseTarget, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	notes, err := o.u.LookUpAll(ctx, ids)
	if err != nil {
		return nil, err
	}
	ts := make([]UseTarget, len(ids))
	for i := range ids {
		name, _ := notes[i].Finished()
		ts[i] = UseTarget{Swept: notes[i].Mark.Tombstone, Note: &notes[i], Missing: name == ""}
	}
	return ts, nil
}

// WriteUse replaces the marker as read (WriteUseOn); where there was none, the finished upload is
// looked at once more: its object, or a folder upload's listing.
func (o objectUses) WriteUse(ctx context.Context, id string, t *UseTarget, at time.Time) (func() error, func(), error) {
	n := t.Note.(*UploadFolder)
	return WriteUseOn(ctx, o.u.R, id, n.Mark, at, func() error {
		_, err := FolderInfo(ctx, o.u.R, id, o.u.Loc, *n)
		return err
	})
}

// LookUpAll reads the folders of many ids (ObjectFolder.Read, then SettleFolder) in few listings.
// Ids are UUIDv7, so the uploads of one prompt, made about the same time, sit side by side in the
// store's key order: one listing that starts just before the first id wanted covers them all,
// where a listing each would cost a round trip each. Each further page starts at the first id not
// yet seen whole (or inside it, when a page ended in its folder), so however far apart the ids
// lie there are at most two listings per id, as with a listing each and a look at the next page.
func (u *ObjectUploads) LookUpAll(ctx context.Context, ids []string) ([]UploadFolder, error) {
	want := map[string]*ObjectFolder{}
	for _, id := range ids {
		want[id] = &ObjectFolder{}
	}
	sorted := slices.Sorted(maps.Keys(want))
	start := sorted[0] // sorts just before <id>/...
	for i := 0; i < len(sorted); {
		objs, more, err := u.L.ListPage(ctx, "", start, min(u.MaxPage, max(u.MinPage, 4*(len(sorted)-i))))
		if err != nil {
			return nil, objectErr("uploads", err, fault.UploadUnreadable)
		}
		last := ""
		for _, o := range objs {
			last = o.Name
			id, n, ok := strings.Cut(o.Name, "/")
			if f := want[id]; ok && f != nil {
				o.Name = n
				f.Objs = append(f.Objs, o)
			}
		}
		if !more || last == "" {
			break
		}
		// Every folder before the last key's is whole; the last key's may go on: the next page
		// starts inside it when it is wanted, else just before the next id wanted.
		lastID, _, _ := strings.Cut(last, "/")
		for i < len(sorted) && sorted[i] < lastID {
			i++
		}
		if start = last; i < len(sorted) && sorted[i] != lastID {
			start = sorted[i]
		}
	}
	notes := make([]UploadFolder, len(ids))
	for i, id := range ids {
		var err error
		if notes[i], err = SettleFolder(ctx, u.R, id, want[id].Read()); err != nil {
			return nil, err
		}
	}
	return notes, nil
}
