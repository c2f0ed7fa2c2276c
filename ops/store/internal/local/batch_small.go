//go:build unix

package local

// Small files in a batch (upload --each of a folder of small files), by the rules of
// store.SmallWrite: a file of at most one chunk is built straight into its finished folder, in
// the batch's one staging partial instead of a partial of its own (BuildSmall). The layout, why
// it saves most of such a run, and what a crash leaves: docs/store.md (the staging partial).

import (
	"os"

	"github.com/attachctl/attachctl/ops/store"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// batchPartialName is the name in a staging partial's info.json.
const batchPartialName = "batch"

// staging returns the batch's staging partial (store.Staging: made at the first small upload).
// b.mu is not held.
func (b *groupBatch) staging() (*partial, error) { return b.stage.Get(b.makeStaging) }

// makeStaging makes the batch's staging partial id, once the partials are listed (which drops
// the dead batches of runs killed before their commit).
func (b *groupBatch) makeStaging(id string) (*partial, error) {
	if _, err := b.s.parts.Of(b.s, "", ""); err != nil { // lists the partials once, dropping dead batches
		return nil, err
	}
	p, err := b.s.makePartial(id, partialMeta{Name: batchPartialName, Size: 0, Created: time.Now().UTC(), Batch: true})
	if err != nil {
		return nil, err
	}
	// The folder the commits' metadata files go to, made now rather than by the first commit:
	// a commit makes nothing that takes room (metaindex.go).
	fd, err := b.s.openDir(lockErr, true, InternalDir, metaDir)
	if err != nil {
		p.remove(false)
		return nil, err
	}
	unix.Close(fd)
	return p, nil
}

// BuildSmall builds the finished folder of upload id (name, its bytes data of BLAKE3 sum) in
// the staging partial (store.SmallBuilder, store.BuildOut): the folder and the file made new (no
// link followed), owner-only and read-only like every finished upload. Its metadata goes in the
// commit's file of STORE/.attachctl/meta (metaindex.go), not in the folder. Where each file is
// fsynced on its own, the folder and the file stay open for the commit; with syncfs they are
// closed here and no descriptor waits.
func (b *groupBatch) BuildSmall(id, name, sum string, data []byte) (*out, error) {
	st, err := b.staging()
	if err != nil {
		return nil, err
	}
	m := &Meta{ID: id, Name: name, Size: int64(len(data)), Blake3: sum, Made: time.Now().UTC()}
	o, err := store.BuildOut(dirOf(st.dirf), id, m, fileSyncEach, []store.OutFileData{{Name: name, Data: data}}, nil)
	if err != nil {
		return nil, err
	}
	return &out{Out: o, s: b.s, stage: st}, nil
}

// UnbuildSmall removes the folder of the staged upload o, built and not taken by the batch
// (store.Out.Unbuild).
func (b *groupBatch) UnbuildSmall(o *out) { o.Unbuild(nil) }

// mkdirFd makes the new folder name in dirfd with mode 0700 whatever the umask, and opens it
// (no link followed). path is for messages.
func mkdirFd(dirfd int, name, path string) (int, error) {
	if err := unix.Mkdirat(dirfd, name, uint32(DirMode)); err != nil {
		return -1, storeErr(path, err)
	}
	fd, err := openDirAt(dirfd, name)
	if err != nil {
		return -1, lockErr(path, err)
	}
	if err := fixMode(fd, DirMode); err != nil {
		unix.Close(fd)
		return -1, storeErr(path, err)
	}
	return fd, nil
}

// umask is the process's file mode creation mask as the system tells it without changing it
// (readUmask: Linux's /proc/self/status), read once; ok false where it cannot be read so.
// Setting it and back to learn it would let a file another goroutine makes meanwhile get the
// wrong mode; attachctl never changes its umask.
var umask = sync.OnceValues(readUmask)

// fixMode gives the file or folder fd just made with mode the mode the umask took bits of; where
// the umask is known to take none of them (a user's usual 022 or 077 takes none of 0700, 0600 or
// 0400), what was made has its mode already and no call is made.
func fixMode(fd int, mode os.FileMode) error {
	if m, ok := umask(); ok && uint32(mode)&m == 0 {
		return nil
	}
	return unix.Fchmod(fd, uint32(mode))
}

// DropDeadBatches is store.PartialLister's (store.DropDeadBatches over the partial's lock).
func (s *localStore) DropDeadBatches(ids []string) {
	store.DropDeadBatches(ids, s.TryLockPartial, func(p *partial) { p.remove(false) })
}
