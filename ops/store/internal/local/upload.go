//go:build unix

package local

import (
	"context"
	"time"

	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// PartialStatus reads the unfinished upload id for Status (store.StatusBackend) as the listing
// reads it (readPartial), checked as its writer checks it (store.OwnPartial), and its declared
// size; the store is opened by Status (store.OpenCalls).
func (s *localStore) PartialStatus(_ context.Context, id string) (store.UnfinishedState, int64, error) {
	partfd, err := s.openIfThere(InternalDir, partialDir)
	if err != nil {
		return store.UnfinishedState{}, 0, err
	} else if partfd >= 0 {
		defer unix.Close(partfd)
	}
	r, err := s.readPartial(partfd, id, false, store.OwnPartial(id))
	if err != nil {
		return r.UnfinishedState, 0, guardErr(id)(r.Path, err)
	}
	return r.UnfinishedState, r.Meta.Size, nil
}

// Changed is the store folder's change time (store.IndexSource): placing or removing an upload
// changes it. Zero when it cannot be read.
func (s *localStore) Changed() time.Time {
	var st unix.Stat_t
	if unix.Lstat(s.Dir, &st) != nil {
		return time.Time{}
	}
	return time.Unix(st.Ctim.Unix())
}
