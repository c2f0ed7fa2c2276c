//go:build unix

package local

import (
	"bytes"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops"
	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// MakeFinished puts a finished upload of data named name, made at made, straight into the local
// store b (from New), making or marking it as an upload does: built inside the store's internal
// folder and renamed into place whole, as a finish does, but with no fsync and with made, the
// files' times, set as given. It is for benchmarks and
// tests that need many old uploads quickly (ops/store/internal/mkstore); uploads go through the
// backend. It exists on Unix only, as the local store does.
func MakeFinished(b store.Backend, name string, data []byte, made time.Time) (*store.Info, error) {
	s, ok := b.(*localStore)
	if !ok {
		return nil, fault.Errorf(fault.UploadInvalid, "store %s: not a local store", b.Location())
	}
	if err := s.open(true); err != nil {
		return nil, err
	}
	if err := store.ValidName(name); err != nil {
		return nil, err
	}
	id, err := store.NewID()
	if err != nil {
		return nil, fault.Errorf(fault.UploadUnreadable, "new upload id: %v", err)
	}
	parts, err := s.openPartials(true)
	if err != nil {
		return nil, err
	}
	defer parts.Close()
	dir, err := mkdirAt(int(parts.Fd()), id, s.partialDir(id))
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	sum, _, _ := ops.Hash(bytes.NewReader(data), nil) // a reader of memory does not fail
	m := &Meta{ID: id, Name: name, Size: int64(len(data)), Blake3: sum, Made: made.UTC()}
	for file, b := range map[string][]byte{name: data, MetaName: encodeMeta(m)} {
		err := writeNewAt(int(dir.Fd()), file, b, ReadOnlyMode, false)
		if err == nil {
			err = setTimesAt(int(dir.Fd()), file, made)
		}
		if err != nil {
			return nil, storeErr(dir.Name()+"/"+file, err)
		}
	}
	storefd, err := s.openDir(lockErr, false)
	if err != nil {
		return nil, err
	}
	defer unix.Close(storefd)
	if err := renameNoReplaceAt(int(parts.Fd()), id, storefd, id); err != nil {
		return nil, storeErr(s.UploadDir(id), err)
	}
	// The folder's times too (after the rename, which may touch them), as a folder finished then
	// would have them: tools that judge an upload by its folder's mtime see its age.
	if err := setTimesAt(storefd, id, made); err != nil {
		return nil, storeErr(s.UploadDir(id), err)
	}
	return m, nil
}
