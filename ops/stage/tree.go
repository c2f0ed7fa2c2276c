package stage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/sniff"
)

// Folder records (kind folder) over a backend that keeps folder uploads (store.Trees): the
// record side of a folder upload. The backend gets the folder's files as the walk found them
// (seam types only) and keeps them as one upload.

// uploadTree uploads the folder record rec as one upload, walking the folder again with the
// stage's walk options, and sets rec's upload, size, files and BLAKE3.
func (u *Uploader) uploadTree(ctx context.Context, rec *manifest.Record) error {
	t := u.b.Features().Trees
	if t == nil {
		return fault.Errorf(fault.UploadInvalid, "%s: a folder; store %s does not keep folder uploads (give --each for one upload per file)", rec.Path, u.b.Location())
	}
	abs, err := absPath(rec.Path)
	if err != nil {
		return fault.Errorf(fault.FileUnreadable, "%s: %v", rec.Path, err)
	}
	// The sniff of this run walked it already (the record's Sniffed); a record read from a
	// manifest is walked here.
	files, walked := rec.Sniffed.([]sniff.TreeFile)
	rec.Sniffed = nil
	if !walked {
		if files, err = sniff.Tree(abs, u.opts.Walk); err != nil {
			return err
		}
	}
	name := rec.Name
	if name == "" {
		name = filepath.Base(abs)
	}
	if err := store.ValidName(name); err != nil {
		return err
	}
	want, err := store.CheckHex(rec.Blake3)
	if err != nil {
		return err
	}
	src := store.TreeSource{Path: abs, Name: name, Blake3: want, Files: make([]store.TreeFile, len(files))}
	for i, f := range files {
		src.Files[i] = store.TreeFile{Rel: f.Rel, Path: filepath.Join(abs, filepath.FromSlash(f.Rel)), Size: f.Size}
	}
	src.Open = OpenTreeFile
	ti, err := t.UploadTree(ctx, src, store.TreeOptions{Progress: u.opts.Progress})
	if errors.Is(err, context.Canceled) {
		// The same code as a single file's: the upload was stopped, not lost.
		return fault.Errorf(fault.UploadInterrupted, "%s: interrupted before its upload finished; the partial is kept, run again to resume%.0w", abs, err)
	}
	if err != nil {
		return err
	}
	SetUpload(rec, u.b, &ti.Info)
	setFolder(rec, len(ti.Files))
	return nil
}

// OpenTreeFile opens a file of a folder being uploaded for the backend (store.TreeSource.Open):
// never through a symlink (the walk found a regular file there; a link put there since is not
// followed), never blocking on a FIFO, a regular file of the size the walk found.
func OpenTreeFile(f store.TreeFile) (store.TreeSourceFile, error) {
	changed := func(why string) error {
		return fault.Errorf(fault.UploadSourceChange, "%s: %s since the folder was walked; not read", f.Path, why)
	}
	file, err := os.OpenFile(f.Path, os.O_RDONLY|oNonblock|oNofollow, 0)
	if err != nil {
		if fi, lerr := os.Lstat(f.Path); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
			return nil, changed("a symlink now")
		}
		if errors.Is(err, os.ErrNotExist) {
			return nil, changed("gone")
		}
		return nil, fault.Errorf(fault.FileUnreadable, "%s: %v", f.Path, unwrapPath(err))
	}
	fi, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, fault.Errorf(fault.FileUnreadable, "%s: %v", f.Path, unwrapPath(err))
	}
	switch {
	case !fi.Mode().IsRegular():
		file.Close()
		return nil, changed("not a regular file")
	case fi.Size() != f.Size:
		file.Close()
		return nil, fault.Errorf(fault.UploadSourceChange, "%s: is %d bytes, it was %d when the folder was walked", f.Path, fi.Size(), f.Size)
	}
	if lfi, err := os.Lstat(f.Path); err != nil || !os.SameFile(fi, lfi) { // where O_NOFOLLOW is not
		file.Close()
		return nil, changed("replaced")
	}
	return &sourceFile{File: file, at: fi}, nil
}

func setFolder(rec *manifest.Record, files int) {
	rec.Kind, rec.Mime, rec.Files = manifest.KindFolder, manifest.MimeFolder, files
}

// folderUpload reports whether id is a finished folder upload of b.
func folderUpload(ctx context.Context, b store.Backend, id string) (store.Trees, bool) {
	t := b.Features().Trees
	if t == nil {
		return nil, false
	}
	_, folder, err := t.FolderFiles(ctx, id)
	return t, err == nil && folder
}

// verifyTree is verify of a folder upload: every file read and checked against the upload's
// listing (the backend names each that changed), and the upload's BLAKE3 against want ("": not
// compared). It sets rec's verified.
func verifyTree(ctx context.Context, t store.Trees, rec *manifest.Record, id, want string, progress func(int64)) error {
	ti, err := t.VerifyTree(ctx, id, progress)
	if ti != nil {
		rec.Verified = &manifest.Verified{OK: err == nil, Blake3: ti.Blake3, At: now().UTC().Format(time.RFC3339)}
	}
	if err != nil {
		return err
	}
	if want != "" && ti.Blake3 != want {
		rec.Verified.OK = false
		return fault.Errorf(fault.VerifyMismatch, "upload %s: folder %s: its BLAKE3 is %s, the record says %s: the record is of another upload, or the folder changed since it was sniffed",
			id, ti.Name, ti.Blake3, want)
	}
	return nil
}
