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
// inside the partial as out/ (out/.upload.json, then data renamed to out/<name>: buildOut); the
// data, the metadata and out/ are fsynced (at once, so that a journaling file system commits them
// together); out/ is renamed to STORE/<id> with RENAME_NOREPLACE and STORE is fsynced; only then
// is the rest of the partial removed. A crash before the rename leaves the partial (lockPartial
// moves out/<name> back to data); a crash after it leaves a finished upload and an info.json that
// Finish, Status and the stage ignore and clean.
func (p *partial) publish(size int64, sum string) (*Meta, error) {
	o, err := p.buildOut(size, sum)
	if err != nil {
		return nil, err
	}
	return o.m, o.commit()
}

// commit publishes the one built folder o (a batch of one); it closes o's partial.
func (o *out) commit() error { return commit([]*out{o}, nil)[0] }

// out is a finished folder built and not yet placed: a partial's out/ (p set), or a small
// upload's folder in a batch's staging partial (stage set; batch_small.go).
type out struct {
	s     *localStore
	id    string
	p     *partial   // the upload's own partial, or nil
	stage *partial   // the staging partial it was built in, or nil
	dir   *os.File   // the folder built (out/, or the staging partial's <id>/); owns the descriptor
	mfs   []*os.File // its metadata files until synced; none when staged (metaindex.go) or syncfs commits
	data  *os.File   // staged only: its bytes, open until synced (nil where syncfs commits)
	m     *Meta
}

// outFile is a file of an upload's own folder beside what it holds: its metadata, a folder
// upload's listing.
type outFile struct {
	name string
	data []byte
}

// buildOut builds out/ for a file upload of size bytes and BLAKE3 sum (build).
func (p *partial) buildOut(size int64, sum string) (*out, error) {
	m := &Meta{ID: p.id, Name: p.meta.Name, Size: size, Blake3: sum, Made: time.Now().UTC()}
	b, _ := json.Marshal(m)
	return p.build(m, outFile{MetaName, append(b, '\n')})
}

// payload is what a finish moves into out/<name>: the data, or a folder upload's tree/<name>.
func (p *partial) payload() string {
	if p.meta.Folder {
		return partialTree + "/" + p.meta.Name
	}
	return partialData
}

// build builds out/, the finished folder of the upload m, the one way for every kind of upload:
// the files (its metadata, a folder upload's listing) written read-only, then what the partial
// holds (payload) renamed into it as out/<name>. Nothing is fsynced yet: the commit does, with
// the files kept open for it where it fsyncs them one by one. Everything is made relative to the
// partial's open folder.
func (p *partial) build(m *Meta, files ...outFile) (*out, error) {
	dirfd := int(p.dirf.Fd())
	removeEntry(dirfd, partialOut)
	fd, err := mkdirFd(dirfd, partialOut, p.dir+"/"+partialOut)
	if err != nil {
		return nil, err
	}
	o := &out{s: p.s, id: p.id, p: p, dir: os.NewFile(uintptr(fd), p.dir+"/"+partialOut), m: m}
	for _, f := range files {
		mf, err := createAt(fd, f.name, o.dir.Name()+"/"+f.name, unix.O_WRONLY, ReadOnlyMode, f.data)
		if err != nil {
			return nil, o.undo(err)
		}
		if fileSyncEach {
			o.mfs = append(o.mfs, mf)
		} else { // the commit's syncfs needs no descriptor of it
			mf.Close()
		}
	}
	from := p.payload()
	// The data read-only (the descriptor stays open for writing, so the sync is unaffected; a
	// folder upload's files were made so), the mode made durable with the rest. undo, and an
	// opener that finds a crashed finish's out/, give it its 0600 back.
	if from == partialData {
		if err := unix.Fchmod(int(p.f.Fd()), uint32(ReadOnlyMode)); err != nil {
			return nil, o.undo(storeErr(p.f.Name(), err))
		}
	}
	if err := unix.Renameat(dirfd, from, fd, p.meta.Name); err != nil {
		return nil, o.undo(storeErr(p.dir+"/"+from, err))
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
	files := append([]*os.File{data, o.dir}, o.mfs...) // a staged upload's metadata is the commit's file (metaindex.go)
	// A plain fsync, on macOS too: the commit flushes the drive once for all (commitSync).
	serr := store.ForEach(context.Background(), len(files), len(files), func(i int) error {
		return wrap(files[i].Name(), unix.Fsync(int(files[i].Fd())))
	})
	o.closeMeta()
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
	o.closeMeta()
	unix.Renameat(int(o.dir.Fd()), o.p.meta.Name, dirfd, o.p.payload())
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
	o.closeMeta()
	for _, f := range []**os.File{&o.data, &o.dir} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
}

// closeMeta closes the metadata files still open.
func (o *out) closeMeta() {
	for _, f := range o.mfs {
		f.Close()
	}
	o.mfs = nil
}

// wrap codes a non-nil error of path with storeErr.
func wrap(path string, err error) error {
	if err != nil {
		return storeErr(path, err)
	}
	return nil
}
