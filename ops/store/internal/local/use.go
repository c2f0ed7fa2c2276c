//go:build unix

package local

import (
	"context"
	"errors"
	"time"

	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// MarkUsed marks the finished uploads ids used at at (store.MarkUsedIn): the marker lock is held
// shared throughout, and each marker is the .used file, whose mtime is then at. A use does not
// stop when its caller is cancelled, as before the engine: the markers are a few small writes.
func (s calls) MarkUsed(_ context.Context, ids []string, at time.Time) error {
	return store.MarkUsedIn(context.Background(), useFolders{s.localStore}, s.Dir, ids, at)
}

// useFolders are the upload folders as MarkUsed opens them (store.UseFolders).
type useFolders struct{ s *localStore }

// HoldUses takes the marker lock shared, which a sweep takes exclusive to rename folders out of
// the store. A store not made yet has no lock to take (upload.missing: its folder is not there).
func (u useFolders) HoldUses() (func(), error) { return u.s.hold(unix.LOCK_SH) }

// OpenUse opens the upload folder (a real folder) and reads its metadata.
func (u useFolders) OpenUse(id string) (store.UseDir, error) {
	dirfd, err := u.s.openDir(guardErr(id), false, id)
	if err != nil {
		return nil, err
	}
	if _, err := u.s.readMetaAt(dirfd, id); err != nil {
		unix.Close(dirfd)
		return nil, err
	}
	return uploadFolder{u.s, dirfd, id}, nil
}

// uploadFolder is a finished upload's folder, open as fd, as a use marks it and a sweep reads it
// (through the guarded reads).
type uploadFolder struct {
	s  *localStore
	fd int
	id string
}

func (d uploadFolder) Close() { unix.Close(d.fd) }

// MarkUse sets the .used marker to at: a new file, made with O_EXCL under a name of its own
// (store.TempPrefix), its times set, then renamed over .used. An existing .used is never opened, so a
// marker that is a link (hard or symbolic) to a file outside the store only loses its name in the
// store; the file it shares is not touched.
func (d uploadFolder) MarkUse(at time.Time) error {
	if err := replaceAt(d.fd, "", UsedName, nil, at, false); err != nil {
		return guardErr(d.id)(d.s.UploadDir(d.id)+"/"+UsedName, err)
	}
	return nil
}

// LastUsed is when the upload was last used: its .used marker's mtime, never followed if it is a link, and zero when it has never been used. A marker
// that is not a regular file is none the store wrote (foreign): the upload is used when it was
// written, its own mtime, as a marker of other words is on S3, and the next use replaces it.
func (d uploadFolder) LastUsed() (at time.Time, foreign bool, err error) {
	var st unix.Stat_t
	err = unix.Fstatat(d.fd, UsedName, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, storeErr(d.s.UploadDir(d.id)+"/"+UsedName, err)
	}
	return timespec(st.Mtim), uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG, nil
}
