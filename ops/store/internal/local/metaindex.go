//go:build unix

package local

// The metadata of small uploads built in a batch's staging partial (batch_small.go) is one file
// per commit, STORE/.attachctl/meta/<bid>.<n>, not a .upload.json in each upload's folder. Its
// form, the order a commit writes and places it in, and how readers and the sweep treat it:
// docs/store.md (meta/).

import (
	"os"

	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

const metaDir = "meta"

// indexed returns the metadata the folder holds for upload id, whose folder has no .upload.json
// (store.MetaIndex.Find: none, or damaged, when no file or two name it).
func (s *localStore) indexed(id string) (*Meta, error) {
	return s.meta.Find(id, s.UploadDir(id), MetaName, s.internal(metaDir), s.metaFolder)
}

// metaFolder lists the folder (ok false when it is not there or cannot be listed; done closes
// it), each file read through the guarded open of finished files (no link followed, a regular
// file of the user's, 0400, one link): a file that is not the store's own names nothing.
func (s *localStore) metaFolder() (f store.MetaFolder, done func(), ok bool) {
	fd, names, err := s.listIfThere(InternalDir, metaDir)
	if err != nil || fd < 0 {
		return f, nil, false
	}
	f.Names = names
	f.Read = func(name string) ([]byte, error) {
		return readGuarded(fd, name, s.internal(metaDir, name), name, 64<<20)
	}
	f.Remove = func(name string) { unix.Unlinkat(fd, name, 0) }
	return f, func() { unix.Close(fd) }, true
}

// stagedMeta makes the metadata file name in the staging partial st, empty, for
// store.MetaFiles.Join: created new (no link followed), owner-only and read-only like every
// finished file; its Publish is publishIndex.
func (st *partial) stagedMeta(name string) (store.MetaFileWrite, error) {
	path := st.dir + "/" + name
	fd, err := createFd(int(st.dirf.Fd()), name, unix.O_WRONLY, ReadOnlyMode, nil)
	if err != nil {
		return store.MetaFileWrite{}, storeErr(path, err)
	}
	return store.MetaFileWrite{
		File: os.NewFile(uintptr(fd), path), Path: path, Sync: fileSyncEach, Code: storeErr,
		Remove:  func() { unix.Unlinkat(int(st.dirf.Fd()), name, 0) },
		Publish: func() error { return st.s.publishIndex(st, name) },
	}, nil
}

// pwriteAll writes b to fd at off. The error is the system's.
func pwriteAll(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		n, err := unix.Pwrite(fd, b, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}

// publishIndex renames the file name from the staging partial st into the folder (made with the
// staging partial: groupBatch.staging) and fsyncs the folder: from here the metadata is durable in
// its place, and the uploads it names may be placed.
func (s *localStore) publishIndex(st *partial, name string) error {
	fd, err := s.openDir(lockErr, true, InternalDir, metaDir)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := renameNoReplaceAt(int(st.dirf.Fd()), name, fd, name); err != nil {
		unix.Unlinkat(int(st.dirf.Fd()), name, 0)
		return storeErr(s.internal(metaDir, name), err)
	}
	return wrap(s.internal(metaDir), dirDurable(fd))
}

// pruneIndex removes the files of the folder that name no upload in the store any more and whose
// batch has ended (store.PruneMetaFiles): the folder listed first, then the partials, then the
// store. A folder that cannot be listed keeps every file (the next sweep prunes them); no
// partials folder when the sweep began is one: a batch may be making it.
func (d *storeDirs) pruneIndex() {
	f, done, ok := d.s.metaFolder()
	if !ok {
		return
	}
	defer done()
	names := func(dirfd int) func() ([]string, error) {
		return func() ([]string, error) { return namesAt(dirfd, "") }
	}
	store.PruneMetaFiles(f, names(d.partfd), names(d.storefd))
}
