//go:build unix

package local

import (
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
	return o.Meta, o.commit()
}

// commit publishes the one built folder o (a batch of one); it closes o's partial.
func (o *out) commit() error { return commit([]*out{o}, nil)[0] }

// out is a finished folder built and not yet placed (store.Out): a partial's out/ (p set), or a
// small upload's folder in a batch's staging partial (stage set; batch_small.go).
type out struct {
	*store.Out
	s     *localStore
	p     *partial // the upload's own partial, or nil
	stage *partial // the staging partial it was built in, or nil
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
	return p.build(m, outFile{MetaName, store.EncodeMetaLine(m)})
}

// build builds out/, the finished folder of the upload m, in the partial (store.BuildOut): what
// it holds (the data, or a folder upload's tree/<name>) is moved in as out/<name>. Where syncfs
// commits, the files written are closed at once: it needs no descriptor of them.
func (p *partial) build(m *Meta, files ...outFile) (*out, error) {
	from := &store.OutPayload{Name: partialData, Data: dirOf(p.f)}
	if p.meta.Folder {
		from = &store.OutPayload{Name: partialTree + "/" + p.meta.Name}
	}
	fs := make([]store.OutFileData, len(files))
	for i, f := range files {
		fs[i] = store.OutFileData{Name: f.name, Data: f.data}
	}
	o, err := store.BuildOut(dirOf(p.dirf), partialOut, m, fileSyncEach, fs, from)
	if err != nil {
		return nil, err
	}
	return &out{Out: o, s: p.s, p: p}, nil
}

// undo takes the built folder apart again (store.Out.Undo) and returns err.
func (o *out) undo(err error) error { return o.Undo(err) }

// done removes what is left of the partial once its upload is placed and STORE fsynced, and
// indexes the upload.
func (o *out) done() {
	if o.p != nil {
		o.s.removePartial(o.ID, false) // a leftover info.json is cleaned by the next finish, stage or sweep
	}
	o.s.idx.Add(o.Meta)
}

// release closes what the commit still held: a staged upload's files, a partial's lock.
func (o *out) release() {
	o.Release()
	if o.p != nil {
		o.p.close()
	}
}

// outDir is store.OutDir over the open folder fd at path (a kept file too: its Sync and Close
// are a file's). Its descriptor is raw, with no *os.File made for it, a call fewer per upload.
type outDir struct {
	fd   int
	path string
}

// dirOf is the open folder f as an outDir; f keeps the descriptor.
func dirOf(f *os.File) outDir                 { return outDir{int(f.Fd()), f.Name()} }
func (d outDir) at(name string) string        { return d.path + "/" + name }
func (d outDir) Remove(name string) error     { return wrap(d.at(name), removeEntry(d.fd, name)) }
func (d outDir) Close() error                 { return unix.Close(d.fd) }
func (d outDir) Chmod(mode os.FileMode) error { return wrap(d.path, unix.Fchmod(d.fd, uint32(mode))) }

// Sync is a plain fsync, on macOS too: the commit flushes the drive once for all (commitSync).
func (d outDir) Sync() error { return wrap(d.path, unix.Fsync(d.fd)) }

func (d outDir) Mkdir(name string) (store.OutDir, error) {
	fd, err := mkdirFd(d.fd, name, d.at(name))
	if err != nil {
		return nil, err
	}
	return outDir{fd, d.at(name)}, nil
}

func (d outDir) Write(name string, data []byte, keep bool) (store.OutFile, error) {
	fd, err := createFd(d.fd, name, unix.O_WRONLY, ReadOnlyMode, data)
	if err != nil {
		return nil, storeErr(d.at(name), err)
	}
	if keep {
		return outDir{fd, d.at(name)}, nil
	}
	unix.Close(fd)
	return nil, nil
}

func (d outDir) Rename(from string, to store.OutDir, name string) error {
	return wrap(d.at(from), unix.Renameat(d.fd, from, to.(outDir).fd, name))
}

func (d outDir) Place(from string, to store.OutDir, name string) error {
	t := to.(outDir)
	return wrap(t.at(name), renameNoReplaceAt(d.fd, from, t.fd, name))
}
