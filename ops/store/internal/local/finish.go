//go:build unix

package local

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"time"

	"github.com/attachctl/attachctl/ops"
	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// hashFile hashes the first n bytes of f with pread (ops.Hash).
func hashFile(f *os.File, n int64) (string, error) {
	sum, got, err := ops.Hash(io.NewSectionReader(f, 0, n), nil)
	if err == nil && got < n {
		err = io.EOF
	}
	if err != nil {
		return "", storeErr(f.Name(), err)
	}
	return sum, nil
}

// publish makes the locked partial a finished upload in one rename. The finished folder is built
// inside the partial as out/ (out/.upload.json, then data renamed to out/<name>); the data, the
// metadata and out/ are fsynced (at once, so that a journaling file system commits them together);
// out/ is renamed to STORE/<id> with RENAME_NOREPLACE and STORE is fsynced; only then is the rest
// of the partial removed. A crash before the rename leaves the partial (lockPartial moves
// out/<name> back to data); a crash after it leaves a finished upload and an info.json that
// Finish, Status and the stage ignore and clean.
func (p *partial) publish(size int64, sum string) (*Meta, error) {
	o, err := p.buildOut(size, sum)
	if err != nil {
		return nil, err
	}
	if err := commit([]*out{o}, nil)[0]; err != nil { // a batch of one; it closes p
		return nil, err
	}
	return o.m, nil
}

// out is a finished folder built and not yet placed: a partial's out/ (p set), or a small
// upload's folder in a batch's staging partial (stage set; batch_small.go).
type out struct {
	s     *localStore
	id    string
	p     *partial // the upload's own partial, or nil
	stage *partial // the staging partial it was built in, or nil
	dir   *os.File // the folder built (out/, or the staging partial's <id>/); owns the descriptor
	mf    *os.File // its .upload.json until synced; nil when staged (metaindex.go) or syncfs commits
	data  *os.File // staged only: its bytes, open until synced (nil where syncfs commits)
	m     *Meta
}

// buildOut builds out/: the metadata written, the data renamed into it. Nothing is fsynced yet.
// Everything is made relative to the partial's open folder.
func (p *partial) buildOut(size int64, sum string) (*out, error) {
	dirfd := int(p.dirf.Fd())
	removeEntry(dirfd, partialOut)
	fd, err := mkdirFd(dirfd, partialOut, p.dir+"/"+partialOut)
	if err != nil {
		return nil, err
	}
	dir := os.NewFile(uintptr(fd), p.dir+"/"+partialOut)
	m := &Meta{ID: p.id, Name: p.meta.Name, Size: size, Blake3: sum, Made: time.Now().UTC()}
	b, _ := json.Marshal(m)
	o := &out{s: p.s, id: p.id, p: p, dir: dir, m: m}
	fail := func(err error) (*out, error) {
		if o.mf != nil {
			o.mf.Close()
		}
		dir.Close()
		removeEntry(dirfd, partialOut)
		return nil, err
	}
	// Read-only (the descriptors stay open for writing, so the sync below is unaffected); the modes
	// are made durable with the rest. undo, and an opener that finds a crashed finish's out/, give
	// the data its 0600 back.
	if o.mf, err = createAt(int(dir.Fd()), MetaName, dir.Name()+"/"+MetaName, unix.O_WRONLY, ReadOnlyMode, append(b, '\n')); err != nil {
		return fail(err)
	}
	if !fileSyncEach { // the commit's syncfs needs no descriptor of it
		o.mf.Close()
		o.mf = nil
	}
	if err := unix.Fchmod(int(p.f.Fd()), uint32(ReadOnlyMode)); err != nil {
		return fail(storeErr(p.f.Name(), err))
	}
	if err := unix.Renameat(dirfd, partialData, int(dir.Fd()), p.meta.Name); err != nil {
		unix.Fchmod(int(p.f.Fd()), uint32(FileMode))
		return fail(storeErr(p.f.Name(), err))
	}
	return o, nil
}

// sync makes the data, the metadata and the folder durable, fsyncing the three at once, and
// closes the files it no longer needs.
func (o *out) sync() error {
	data := o.data
	if o.p != nil {
		data = o.p.f
	}
	files := []*os.File{data, o.dir}
	if o.mf != nil { // a staged upload's metadata is the commit's file (metaindex.go)
		files = append(files, o.mf)
	}
	// A plain fsync, on macOS too: the commit flushes the drive once for all (commitSync).
	serr := store.ForEach(context.Background(), len(files), len(files), func(i int) error {
		return wrap(files[i].Name(), unix.Fsync(int(files[i].Fd())))
	})
	if o.mf != nil {
		o.mf.Close()
		o.mf = nil
	}
	if o.p == nil {
		o.release()
	}
	return serr
}

// undo takes the built folder apart again and returns err: a partial's data goes back where it
// was (an unfinished upload again); a staged upload stays in the staging partial, which goes with
// the batch.
func (o *out) undo(err error) error {
	if o.p == nil {
		o.release()
		return err
	}
	dirfd := int(o.p.dirf.Fd())
	back := partialData
	if o.p.meta.Folder { // a folder upload's tree (publishTree)
		back = partialTree + "/" + o.p.meta.Name
	}
	unix.Renameat(int(o.dir.Fd()), o.p.meta.Name, dirfd, back)
	unix.Fchmod(int(o.p.f.Fd()), uint32(FileMode)) // unfinished again: writable
	o.dir.Close()
	removeEntry(dirfd, partialOut)
	return err
}

// place renames the built folder to STORE/<id> (storefd is the store folder): published, durable
// once the store is fsynced. On failure it is taken apart (undo).
func (o *out) place(storefd int) error {
	target := o.s.UploadDir(o.id)
	from, name := o.stage, o.id
	if o.p != nil {
		from, name = o.p, partialOut
	}
	if err := renameNoReplaceAt(int(from.dirf.Fd()), name, storefd, o.id); err != nil {
		return o.undo(storeErr(target, err))
	}
	if o.p != nil {
		o.dir.Close()
	}
	return nil
}

// done removes what is left of the partial once its upload is placed and STORE fsynced, and
// indexes the upload.
func (o *out) done() {
	if o.p != nil {
		o.s.removePartial(o.id, false) // a leftover info.json is cleaned by the next finish, stage or sweep
	}
	o.s.idx.Add(o.m)
}

// release closes what the commit still held: a partial's lock, or a staged upload's files.
func (o *out) release() {
	if o.p != nil {
		o.p.close()
		return
	}
	for _, f := range []**os.File{&o.data, &o.mf, &o.dir} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
}

// wrap codes a non-nil error of path with storeErr.
func wrap(path string, err error) error {
	if err != nil {
		return storeErr(path, err)
	}
	return nil
}
