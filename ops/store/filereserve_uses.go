package store

import (
	"context"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// The uses of a store that keeps each finished upload in a folder of its own, under a lock that a
// sweep takes exclusive while it sets uploads aside (the local store; the in-memory one, its
// folders in maps under its mutex), written once over its folders (UseFolders): the lock is held
// shared throughout a MarkUsed, and each upload's folder, opened and checked (there, and a
// finished upload: its metadata readable), stays open until every marker is written. So a folder
// checked stays in place until it is marked, and no marker's write needs a check after it.

// UseFolders are the folders of such a store's finished uploads, as MarkUsedIn marks them.
type UseFolders interface {
	// HoldUses takes the lock a sweep takes exclusive, shared. upload.missing: there is no store
	// (no lock to take), so no upload.
	HoldUses() (release func(), err error)
	// OpenUse opens the folder of the finished upload id and checks it: upload.missing when it is
	// not there or holds no finished upload; another error stops the whole call.
	OpenUse(id string) (UseDir, error)
}

// UseDir is the open folder of one finished upload.
type UseDir interface {
	// MarkUse writes the upload's use marker at at, a new marker put in the place of the old.
	MarkUse(at time.Time) error
	Close()
}

// MarkUsedIn is Backend.MarkUsed over f (MarkUsedOn, one marker after another); where names the
// store in messages.
func MarkUsedIn(ctx context.Context, f UseFolders, where string, ids []string, at time.Time) error {
	u := &heldUses{f: f, where: where}
	defer u.close()
	return MarkUsedOn(ctx, u, ids, at)
}

// heldUses is one MarkUsedIn's UseBackend: the folders it opened, closed at the end.
type heldUses struct {
	f     UseFolders
	where string
	dirs  []UseDir
}

func (u *heldUses) close() {
	for _, d := range u.dirs {
		d.Close()
	}
}

func (u *heldUses) UseProperties() UseProperties { return UseProperties{Jobs: 1, Where: u.where} }

func (u *heldUses) HoldUses(context.Context, []string) (func(), error) { return u.f.HoldUses() }

func (u *heldUses) LookUpUses(_ context.Context, ids []string) ([]UseTarget, error) {
	ts := make([]UseTarget, len(ids))
	for i, id := range ids {
		d, err := u.f.OpenUse(id)
		if ts[i].Missing = fault.CodeOf(err) == fault.UploadMissing; err != nil && !ts[i].Missing {
			return nil, err
		}
		if err == nil {
			u.dirs = append(u.dirs, d)
			ts[i].Note = d
		}
	}
	return ts, nil
}

// WriteUse needs no check: the lock keeps the folder in place.
func (u *heldUses) WriteUse(_ context.Context, _ string, t *UseTarget, at time.Time) (func() error, func(), error) {
	return nil, nil, t.Note.(UseDir).MarkUse(at)
}
