//go:build unix

package local

// Small files in a batch (upload --each of a folder of small files): a file of at most one chunk
// is read in one pass and written straight into its finished folder, built in the batch's one
// staging partial instead of a partial of its own, and is not resumed byte by byte. The layout,
// why it saves most of such a run, and what a crash leaves: docs/store.md (the staging partial).

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// batchPartialName is the name in a staging partial's info.json.
const batchPartialName = "batch"

// chunkPool recycles the buffers of small sources from one file to the next: a fresh buffer per
// file costs a first touch of every page, which on a VM is dearer than the copy itself.
var chunkPool sync.Pool

// small reports whether a source of size bytes goes through the batch's staging partial.
func small(size, chunk int64) bool { return size <= chunk }

// smallWrite is the upload of a small source into the batch b: read and hashed in one pass,
// checked by store.StreamUpload, and built in b's staging partial.
type smallWrite struct {
	s        *localStore
	b        *groupBatch
	src      store.Source
	progress func(int64)
	bp       *[]byte // the source's bytes, from chunkPool
	id       string
	release  func() // of its reservation, once built
}

func (w *smallWrite) ID() string                          { return w.id }
func (w *smallWrite) Stored() (store.StreamStored, error) { return store.StreamStored{}, nil }
func (w *smallWrite) Restart() error                      { return nil }
func (w *smallWrite) Refuse(context.Context, string)      {}

// Write reads the whole source at once; progress is told once it is built.
func (w *smallWrite) Write(ctx context.Context, f store.SourceFile, _ int64, pass store.StreamPass) (*Meta, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	bp, _ := chunkPool.Get().(*[]byte)
	if bp == nil || int64(cap(*bp)) < w.src.Size {
		nb := make([]byte, max(w.src.Size, 4<<10))
		bp = &nb
	}
	w.bp = bp
	buf := (*bp)[:w.src.Size]
	if err := store.ReadSource(f, buf, 0); err != nil {
		return nil, err
	}
	pass.Observe(buf)
	pass.Hash.Write(buf)
	return nil, nil
}

// Publish builds the upload in the batch, unless another worker of it built the same file
// (store.GroupBatch.Build).
func (w *smallWrite) Publish(ctx context.Context, sum string) (*Meta, error) {
	id, err := store.NewID()
	if err != nil {
		return nil, fault.Errorf(fault.UploadUnreadable, "new upload id: %v", err)
	}
	if id, err = w.b.Build(sum, w.src.Name, id, w); err != nil {
		return nil, err
	}
	w.progress(w.src.Size)
	return &Meta{ID: id, Name: w.src.Name, Size: w.src.Size, Blake3: sum}, nil
}

// BatchBuild admits the upload against the store's limits, before anything is made (the
// reservation holds its room while it waits for the batch's commit, which the listing does not
// show), and builds it in the staging partial (store.GroupBuilder).
func (w *smallWrite) BatchBuild(id, sum string) (*out, error) {
	release, err := w.s.quota.AdmitID(context.Background(), id, w.src.Name, w.src.Size)
	if err != nil {
		return nil, err
	}
	o, err := w.b.buildSmall(id, w.src.Name, sum, (*w.bp)[:w.src.Size])
	if err != nil {
		release()
		return nil, err
	}
	w.release = release
	return o, nil
}

// BatchUnbuild removes the upload built and kept out of the batch (its metadata's line did not
// fit), and its reservation.
func (w *smallWrite) BatchUnbuild(o *out, _ error) {
	w.b.unbuild(o)
	w.release()
}

func (w *smallWrite) Close(error) {
	if w.bp != nil {
		chunkPool.Put(w.bp)
	}
}

// staging returns the batch's staging partial, made at the first small upload. b.mu is not held.
func (b *groupBatch) staging() (*partial, error) {
	b.stageMu.Lock()
	defer b.stageMu.Unlock()
	if b.stage != nil {
		return b.stage, nil
	}
	if _, err := b.s.parts.Of(b.s, "", ""); err != nil { // lists the partials once, dropping dead batches
		return nil, err
	}
	id, err := store.NewID()
	if err != nil {
		return nil, fault.Errorf(fault.UploadUnreadable, "new upload id: %v", err)
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
	b.stage = p
	return p, nil
}

// buildSmall builds the finished folder of upload id (name, its bytes data of BLAKE3 sum) in
// the staging partial: the folder and the file made new (O_EXCL, no link followed), owner-only
// and read-only like every finished upload. Its metadata goes in the commit's file of
// STORE/.attachctl/meta (metaindex.go), not in the folder. Where each file is fsynced on its own,
// the folder and the file stay open for the commit; with syncfs they are closed here and no
// descriptor waits.
func (b *groupBatch) buildSmall(id, name, sum string, data []byte) (*out, error) {
	st, err := b.staging()
	if err != nil {
		return nil, err
	}
	stfd := int(st.dirf.Fd())
	path := st.dir + "/" + id
	dirfd, err := mkdirFd(stfd, id, path)
	if err != nil {
		return nil, err
	}
	m := &Meta{ID: id, Name: name, Size: int64(len(data)), Blake3: sum, Made: time.Now().UTC()}
	fd, err := createFd(dirfd, name, unix.O_WRONLY, ReadOnlyMode, data)
	if err != nil {
		err = storeErr(path+"/"+name, err)
		unix.Close(dirfd)
		removeEntry(stfd, id)
		return nil, err
	}
	o := &out{s: b.s, id: id, stage: st, m: m}
	if fileSyncEach {
		o.dir, o.data = os.NewFile(uintptr(dirfd), path), os.NewFile(uintptr(fd), path+"/"+name)
	} else { // the commit's syncfs needs no descriptor of these
		unix.Close(fd)
		unix.Close(dirfd)
	}
	return o, nil
}

// unbuild removes the folder of the staged upload o, built and not taken by the batch: a build
// that failed leaves nothing, and what it wrote is room for the others again.
func (b *groupBatch) unbuild(o *out) {
	o.release()
	stfd := int(o.stage.dirf.Fd())
	removeEntry(stfd, o.id)
}

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

// DropDeadBatches is store.PartialLister's: the staging partials among ids that no process holds
// (their lock is free) are removed.
func (s *localStore) DropDeadBatches(ids []string) {
	for _, id := range ids {
		if p, err := s.lockPartial(id, true); err == nil {
			if p.meta.Batch {
				p.remove(false)
			} else {
				p.close()
			}
		}
	}
}
