//go:build unix

package local

import (
	"context"
	"errors"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// MarkUsed marks the finished uploads ids used at at: the rules are written once
// (store.MarkUsedOn); what is the local store's is below. It holds the marker lock shared
// throughout, so a folder opened and checked (a real folder with readable metadata) stays in place
// until every marker is written: a sweep renames folders out of the store only while it holds
// the lock exclusive. Each marker is the .used file, whose mtime is then at. A use does not stop
// when its caller is cancelled, as before the engine: the markers are a few small writes.
func (s *localStore) MarkUsed(_ context.Context, ids []string, at time.Time) error {
	if err := s.open(false); err != nil {
		return err
	}
	u := &useRun{s: s}
	defer u.close()
	return store.MarkUsedOn(context.Background(), u, ids, at)
}

// useRun is one MarkUsed's store.UseBackend: the upload folders it opened, closed at the end.
type useRun struct {
	s    *localStore
	dirs []int
}

func (u *useRun) close() {
	for _, fd := range u.dirs {
		unix.Close(fd)
	}
}

func (u *useRun) UseProperties() store.UseProperties {
	return store.UseProperties{Jobs: 1, Where: u.s.Dir}
}

// HoldUses takes the marker lock shared. A store not made yet has no lock to take (upload.missing:
// its folder is not there), and no upload.
func (u *useRun) HoldUses(context.Context, []string) (func(), error) {
	return u.s.hold(unix.LOCK_SH)
}

// LookUpUses opens and checks each upload folder in turn: one that is not there, or has no
// metadata, is no finished upload (Missing); any other failure stops the look-up.
func (u *useRun) LookUpUses(_ context.Context, ids []string) ([]store.UseTarget, error) {
	ts := make([]store.UseTarget, len(ids))
	for i, id := range ids {
		dirfd, err := u.s.openDir(guardErr(id), false, id)
		if err == nil {
			u.dirs = append(u.dirs, dirfd)
			_, err = u.s.readMetaAt(dirfd, id)
		}
		if ts[i].Missing = fault.CodeOf(err) == fault.UploadMissing; err != nil && !ts[i].Missing {
			return nil, err
		}
		ts[i].Note = dirfd
	}
	return ts, nil
}

// WriteUse sets the .used marker to at: a new file, made with O_EXCL under a name of its own
// (store.TempPrefix), its times set, then renamed over .used. An existing .used is never opened, so a
// marker that is a link (hard or symbolic) to a file outside the store only loses its name in the
// store; the file it shares is not touched. The lock proves the folder is there: no check.
func (u *useRun) WriteUse(_ context.Context, id string, t *store.UseTarget, at time.Time) (func() error, func(), error) {
	if err := replaceAt(t.Note.(int), "", UsedName, nil, at, false); err != nil {
		return nil, nil, guardErr(id)(u.s.UploadDir(id)+"/"+UsedName, err)
	}
	return nil, nil, nil
}

// lastUsedAt is when the upload id, whose folder is open as dirfd, was last used: its .used
// marker's mtime, never followed if it is a link, and zero when it has never been used. A marker
// that is not a regular file is none the store wrote (foreign): the upload is used when it was
// written, its own mtime, as a marker of other words is on S3, and the next use replaces it.
func (s *localStore) lastUsedAt(dirfd int, id string) (at time.Time, foreign bool, err error) {
	var st unix.Stat_t
	err = unix.Fstatat(dirfd, UsedName, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, storeErr(s.UploadDir(id)+"/"+UsedName, err)
	}
	return timespec(st.Mtim), uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG, nil
}
