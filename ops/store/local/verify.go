//go:build unix

package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops"
	"golang.org/x/sys/unix"
)

// VerifyRecord re-reads rec's source file at rec.Path and its finished upload (through the guarded
// open), and sets rec.Verified: ok when both hash to rec.Blake3 (or to each other, when the record
// carries no hash) and to the upload's recorded hash; blake3 is what was read from the upload.
// A difference is verify.mismatch; an upload not there is upload.missing; one that fails the
// guarded open is upload.unreadable; a source file not there is file.missing.
func (s *Store) VerifyRecord(rec *manifest.Record, progress func(int64)) error {
	id, err := s.recordID(rec)
	if err != nil {
		return err
	}
	meta, err := s.ReadMeta(id)
	if err != nil {
		return err
	}
	got, err := s.hashFinished(meta, progress)
	if err != nil {
		return err
	}
	src, err := hashSource(rec.Path, progress)
	if err != nil {
		return err
	}
	rec.Verified = &manifest.Verified{OK: true, Blake3: got, At: now().UTC().Format(time.RFC3339)}
	want := rec.Blake3
	if want == "" {
		want = src
	}
	var why []string
	if src != want {
		why = append(why, fmt.Sprintf("source %s hashes to %s, the record says %s", rec.Path, src, want))
	}
	if got != want {
		why = append(why, fmt.Sprintf("upload %s hashes to %s, expected %s", id, got, want))
	}
	if got != meta.Blake3 {
		why = append(why, fmt.Sprintf("upload %s hashes to %s, its metadata says %s", id, got, meta.Blake3))
	}
	if len(why) > 0 {
		rec.Verified.OK = false
		return manifest.Errorf(manifest.VerifyMismatch, "%s", joinWhy(why))
	}
	return nil
}

func joinWhy(why []string) string {
	s := why[0]
	for _, w := range why[1:] {
		s += "; " + w
	}
	return s
}

// hashFinished hashes a finished upload read through the guarded open, checking its size too.
func (s *Store) hashFinished(meta *Meta, progress func(int64)) (string, error) {
	f, err := s.OpenFinished(meta.ID, meta.Name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sum, n, err := ops.Hash(f, progress)
	if err != nil {
		return "", manifest.Errorf(manifest.UploadUnreadable, "upload %s: %s: %w", meta.ID, f.Name(), err)
	}
	if n != meta.Size {
		return sum, manifest.Errorf(manifest.VerifyMismatch, "upload %s: %s has %d bytes, its metadata says %d", meta.ID, f.Name(), n, meta.Size)
	}
	return sum, nil
}

// hashSource hashes the record's own file, following a link as sniff does for a named path.
func hashSource(path string, progress func(int64)) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", manifest.Errorf(manifest.FileMissing, "%s: no such file", path)
		}
		return "", manifest.Errorf(manifest.FileUnreadable, "%s: %w", path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() {
		return "", manifest.Errorf(manifest.FileNotRegular, "%s: not a regular file", path)
	}
	sum, _, err := ops.Hash(f, progress)
	if err != nil {
		return "", manifest.Errorf(manifest.FileUnreadable, "%s: %w", path, err)
	}
	return sum, nil
}

// VerifyUpload checks one upload of the store against its recorded hash and the store's rules:
// the folder is a real folder of mode 0700, its metadata is readable, its entries are the file,
// the metadata and at most a marker, all regular files of mode 0600 with one link, and the file
// passes the guarded open and hashes to the metadata's hash. It returns a record for the upload
// (path, name, size and blake3 from the metadata, upload, verified) and the error, if any.
func (s *Store) VerifyUpload(id string, progress func(int64)) (*manifest.Record, error) {
	rec := &manifest.Record{Path: s.UploadDir(id)}
	if err := ValidID(id); err != nil {
		return rec, err
	}
	dirfd, err := s.openUploadDir(id)
	if err != nil {
		return rec, err
	}
	meta, err := s.readMetaAt(dirfd, id)
	if err == nil {
		rec.Path, rec.Name, rec.Blake3 = s.FinishedPath(id, meta.Name), meta.Name, meta.Blake3
		rec.SetSize(meta.Size)
		rec.Upload = &manifest.Upload{ID: id, Store: s.Dir, Path: rec.Path}
		err = s.checkFolder(dirfd, id, meta.Name)
	}
	unix.Close(dirfd)
	if err != nil {
		return rec, err
	}
	got, err := s.hashFinished(meta, progress)
	if got != "" {
		rec.Verified = &manifest.Verified{OK: err == nil && got == meta.Blake3, Blake3: got, At: now().UTC().Format(time.RFC3339)}
	}
	if err != nil {
		return rec, err
	}
	if got != meta.Blake3 {
		return rec, manifest.Errorf(manifest.VerifyMismatch, "upload %s: %s hashes to %s, its metadata says %s", id, rec.Path, got, meta.Blake3)
	}
	return rec, nil
}

// checkFolder checks the upload folder's mode and entries.
func (s *Store) checkFolder(dirfd int, id, name string) error {
	dir := s.UploadDir(id)
	var st unix.Stat_t
	if err := unix.Fstat(dirfd, &st); err != nil {
		return guardErr(dir, id, err)
	}
	if uint32(st.Mode)&0o7777 != uint32(DirMode) {
		return manifest.Errorf(manifest.UploadUnreadable, "upload %s: %s: folder mode %04o, not 0700", id, dir, uint32(st.Mode)&0o7777)
	}
	if st.Uid != euid {
		return manifest.Errorf(manifest.UploadUnreadable, "upload %s: %s: owned by uid %d, not by the current user", id, dir, st.Uid)
	}
	fd, err := unix.Dup(dirfd)
	if err != nil {
		return guardErr(dir, id, err)
	}
	d := os.NewFile(uintptr(fd), dir)
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return guardErr(dir, id, err)
	}
	for _, n := range names {
		if n != name && n != MetaName && n != UsedName && !strings.HasPrefix(n, markerTmp) {
			return manifest.Errorf(manifest.UploadUnreadable, "upload %s: %s: unexpected entry %q", id, dir, n)
		}
		if err := unix.Fstatat(dirfd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return guardErr(dir+"/"+n, id, err)
		}
		var why string
		switch {
		case uint32(st.Mode)&unix.S_IFMT == unix.S_IFLNK:
			why = "a symlink"
		case uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG:
			why = "not a regular file"
		case (n == name || n == MetaName) && !finishedMode(uint32(st.Mode)&0o7777):
			why = fmt.Sprintf("mode %04o, not 0400 (or an older store's 0600)", uint32(st.Mode)&0o7777)
		case n != name && n != MetaName && uint32(st.Mode)&0o7777 != uint32(FileMode):
			why = fmt.Sprintf("mode %04o, not 0600", uint32(st.Mode)&0o7777)
		case st.Nlink != 1:
			why = fmt.Sprintf("%d hard links, not 1", st.Nlink)
		}
		if why != "" {
			return manifest.Errorf(manifest.UploadUnreadable, "upload %s: %s/%s: %s", id, dir, n, why)
		}
	}
	return nil
}

// OpenForCheck opens a path named by a b3sum line (verify --check) for hashing. A path that is a
// finished upload of a store (STORE/<id>/<name>, STORE a store) is opened only through the
// guarded open: a symlink, a FIFO or a hard link there fails with upload.unreadable and nothing
// blocks. Any other path is opened as b3sum would (a symlink named is followed) but without
// blocking, and must be a regular file (file.notRegular otherwise).
func OpenForCheck(path string) (*os.File, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, manifest.Errorf(manifest.FileUnreadable, "%s: %v", path, err)
	}
	dir, name := filepath.Split(abs)
	dir = filepath.Clean(dir)
	id := filepath.Base(dir)
	if ValidID(id) == nil && ValidName(name) == nil {
		s := &Store{Dir: filepath.Dir(dir)}
		if kind, err := s.judge(); err == nil && (kind == marked || kind == laidOut) {
			return s.OpenFinished(id, name)
		}
	}
	f, _, err := openSource(abs)
	return f, err
}
