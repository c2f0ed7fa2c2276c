package ops

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/zeebo/blake3"
	"golang.org/x/sys/unix"
)

// Finish checks and publishes the unfinished upload id. size is the size the producer expects
// (-1: not checked; a size left open at Begin is fixed here), blake3hex the BLAKE3 it expects
// ("": not checked). A wrong size is upload.sizeMismatch, a wrong hash upload.hashMismatch; both
// keep the partial as it is. Finishing an upload that is already finished returns its metadata
// (after the same checks), so a finish that crashed after its rename can be run again.
func (s *Store) Finish(id string, size int64, blake3hex string) (*Meta, error) {
	if err := ValidID(id); err != nil {
		return nil, err
	}
	want, err := checkHex(blake3hex)
	if err != nil {
		return nil, err
	}
	if size < -1 {
		return nil, manifest.Errorf(manifest.UploadInvalid, "size %d: not a size", size)
	}
	p, err := s.lockPartial(id, false)
	if err != nil {
		if manifest.CodeOf(err) != manifest.UploadMissing {
			return nil, err
		}
		m, merr := s.ReadMeta(id)
		if merr != nil {
			return nil, err
		}
		if size >= 0 && m.Size != size {
			return nil, manifest.Errorf(manifest.UploadSizeMismatch, "upload %s: finished with %d bytes, not %d", id, m.Size, size)
		}
		if want != "" && m.Blake3 != want {
			return nil, manifest.Errorf(manifest.UploadHashMismatch, "upload %s: finished with BLAKE3 %s, not %s", id, m.Blake3, want)
		}
		os.RemoveAll(s.partialDir(id)) // what a finish that crashed after its rename left
		return m, nil
	}
	defer p.close()
	cur, err := p.size()
	if err != nil {
		return nil, err
	}
	if p.meta.Size >= 0 && size >= 0 && p.meta.Size != size {
		return nil, manifest.Errorf(manifest.UploadSizeMismatch, "upload %s: declared %d bytes at begin, %d at finish", id, p.meta.Size, size)
	}
	if size < 0 {
		size = p.meta.Size
	}
	if size >= 0 && cur != size {
		return nil, manifest.Errorf(manifest.UploadSizeMismatch, "upload %s: has %d bytes, expected %d", id, cur, size)
	}
	sum, err := hashFile(p.f, cur)
	if err != nil {
		return nil, err
	}
	if want != "" && sum != want {
		return nil, manifest.Errorf(manifest.UploadHashMismatch, "upload %s: BLAKE3 of the %d bytes is %s, expected %s", id, cur, sum, want)
	}
	return p.publish(cur, sum)
}

// checkHex normalises an expected BLAKE3: "" or 64 hex digits (upload.invalid otherwise).
func checkHex(h string) (string, error) {
	if h == "" {
		return "", nil
	}
	l := strings.ToLower(h)
	if _, err := hex.DecodeString(l); err != nil || len(l) != 64 {
		return "", manifest.Errorf(manifest.UploadInvalid, "blake3 %q: not 64 hex digits", h)
	}
	return l, nil
}

// hashFile hashes the first n bytes of f with pread.
func hashFile(f *os.File, n int64) (string, error) {
	h := blake3.New()
	buf := make([]byte, 1<<20)
	for off := int64(0); off < n; {
		k, err := f.ReadAt(buf[:min(int64(len(buf)), n-off)], off)
		h.Write(buf[:k])
		off += int64(k)
		if err != nil && off < n {
			return "", storeErr(f.Name(), err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
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
	if err := commit([]*out{o})[0]; err != nil { // a batch of one; it closes p
		return nil, err
	}
	return o.m, nil
}

// out is a partial's finished folder, built as out/ inside it and not yet placed.
type out struct {
	p           *partial
	dir         string   // the partial's out/
	mf          *os.File // out/.upload.json, open
	data, final string   // the partial's data file, and where it is now: out/<name>
	m           *Meta
}

// buildOut builds out/: the metadata written, the data renamed into it. Nothing is fsynced yet.
func (p *partial) buildOut(size int64, sum string) (*out, error) {
	dir := filepath.Join(p.dir, partialOut)
	os.RemoveAll(dir)
	if err := mkdirNew(dir); err != nil {
		return nil, err
	}
	m := &Meta{ID: p.id, Name: p.meta.Name, Size: size, Blake3: sum, Made: time.Now().UTC()}
	b, _ := json.Marshal(m)
	mf, err := createFile(filepath.Join(dir, MetaName), unix.O_WRONLY)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if _, err := mf.Write(append(b, '\n')); err != nil {
		mf.Close()
		os.RemoveAll(dir)
		return nil, storeErr(mf.Name(), err)
	}
	o := &out{p: p, dir: dir, mf: mf, data: filepath.Join(p.dir, partialData), final: filepath.Join(dir, p.meta.Name), m: m}
	if err := os.Rename(o.data, o.final); err != nil {
		mf.Close()
		os.RemoveAll(dir)
		return nil, storeErr(o.data, err)
	}
	return o, nil
}

// sync makes the data, the metadata and out/ durable, fsyncing the three at once, and closes the
// metadata file.
func (o *out) sync() error {
	defer o.mf.Close()
	syncs := []func() error{
		func() error { return wrap(o.p.f.Name(), o.p.f.Sync()) },
		func() error { return wrap(o.mf.Name(), o.mf.Sync()) },
		func() error { return syncDir(o.dir) },
	}
	errs := make(chan error, len(syncs))
	for _, f := range syncs {
		go func() { errs <- f() }()
	}
	var serr error
	for range syncs {
		if err := <-errs; serr == nil {
			serr = err
		}
	}
	return serr
}

// undo takes out/ apart again, the data back where it was, and returns err.
func (o *out) undo(err error) error {
	os.Rename(o.final, o.data)
	os.RemoveAll(o.dir)
	return err
}

// place renames out/ to STORE/<id>: published (durable once STORE is fsynced). On failure out/ is
// taken apart.
func (o *out) place() error {
	target := o.p.s.UploadDir(o.p.id)
	if err := renameNoReplace(o.dir, target); err != nil {
		return o.undo(storeErr(target, err))
	}
	return nil
}

// done removes what is left of the partial once its upload is placed and STORE fsynced, and
// indexes the upload.
func (o *out) done() {
	os.RemoveAll(o.p.dir) // not fsynced: a leftover info.json is cleaned by the next finish or stage
	o.p.s.idx.add(o.m)
}

// wrap codes a non-nil error of path with storeErr.
func wrap(path string, err error) error {
	if err != nil {
		return storeErr(path, err)
	}
	return nil
}

// renameNoReplace renames a folder to a name that must not exist yet.
func renameNoReplace(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		if _, serr := os.Lstat(to); serr == nil {
			return unix.EEXIST
		}
		return os.Rename(from, to)
	}
	return err
}
