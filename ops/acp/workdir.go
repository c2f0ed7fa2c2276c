package acp

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/zeebo/blake3"

	"github.com/attachctl/attachctl/manifest"
)

// Modes in a work folder: the copies are read-only and, like the store's files, the owner's only.
const (
	workDirMode  os.FileMode = 0o700
	workFileMode os.FileMode = 0o400
)

// copyPath is where the work folder dir keeps its copy of upload id's file name.
func copyPath(dir, id, name string) string { return filepath.Join(dir, id, name) }

// copyOut makes sure the work folder holds an intact copy of every file the resolved prompt names
// by path (links and embedded files): one already there is kept when it is a regular file of mode
// 0400 with the upload's size and BLAKE3; otherwise a new copy is written beside it, checked
// against the BLAKE3 the store recorded, and renamed over it, so nothing is ever changed in place.
// Every path is opened below dir (os.Root): a link inside the work folder cannot lead out of it.
func (res *Resolution) copyOut(u Uploads, dir string) error {
	if err := os.MkdirAll(dir, workDirMode); err != nil {
		return manifest.Errorf(manifest.UploadUnreadable, "work folder %s: %v", dir, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return manifest.Errorf(manifest.UploadUnreadable, "work folder %s: %v", dir, err)
	}
	defer root.Close()
	done := map[string]bool{}
	todo := make([]*ref, len(res.refs)) // each upload once
	for i, r := range res.refs {
		if r == nil || r.mode != modePath && r.mode != embedText || done[r.id] {
			continue
		}
		done[r.id] = true
		todo[i] = r
	}
	reused := make([]bool, len(todo))
	errs := eachRef(todo, func(i int, r *ref) (err error) {
		reused[i], err = copyOne(root, u, r)
		return err
	})
	for i, r := range todo {
		switch {
		case r == nil:
		case errs[i] != nil:
			return atBlock(i, errs[i])
		case reused[i]:
			res.Reused++
		default:
			res.Copied++
		}
	}
	return nil
}

// copyOne puts r's intact copy in place under root, reporting whether the one there was kept.
func copyOne(root *os.Root, u Uploads, r *ref) (bool, error) {
	fail := func(err error) error {
		return manifest.Errorf(manifest.UploadUnreadable, "upload %s: work copy %s: %v", r.id, r.link, err)
	}
	fi, err := root.Lstat(r.id)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := root.Mkdir(r.id, workDirMode); err != nil {
			return false, fail(err)
		}
		if err := root.Chmod(r.id, workDirMode); err != nil { // whatever the umask
			return false, fail(err)
		}
	case err != nil:
		return false, fail(err)
	case !fi.IsDir():
		return false, fail(fmt.Errorf("%s is not a real folder", filepath.Dir(r.link)))
	}
	if r.folder != nil {
		return copyFolder(root, r)
	}
	rel := filepath.Join(r.id, r.name)
	if intact(root, rel, r) {
		return true, nil
	}
	tmp := filepath.Join(r.id, ".attachctl-"+rand.Text()+".tmp")
	out, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, workFileMode)
	if err != nil {
		return false, fail(err)
	}
	err = fillCopy(out, u, r)
	if cerr := out.Close(); err == nil && cerr != nil {
		err = fail(cerr)
	}
	if err == nil {
		if rerr := root.Rename(tmp, rel); rerr != nil {
			err = fail(rerr)
		}
	}
	if err != nil {
		root.Remove(tmp)
		return false, err
	}
	return false, nil
}

// fillCopy copies r's upload into out, hashing it, and checks the bytes against the upload's
// recorded size and BLAKE3.
func fillCopy(out *os.File, u Uploads, r *ref) error {
	if err := out.Chmod(workFileMode); err != nil { // whatever the umask
		return manifest.Errorf(manifest.UploadUnreadable, "upload %s: work copy: %v", r.id, err)
	}
	f, err := u.Open(r.id, r.name)
	if err != nil {
		return err
	}
	defer f.Close()
	h := blake3.New()
	n, err := io.Copy(io.MultiWriter(out, h), f)
	if err != nil {
		if manifest.CodeOf(err) != "" {
			return err // the store's own words and code (store.unreachable: the server went away)
		}
		return manifest.Errorf(manifest.UploadUnreadable, "upload %s: work copy %s: %v", r.id, r.link, err)
	}
	if n != r.size || hex.EncodeToString(h.Sum(nil)) != r.blake3 {
		return manifest.Errorf(manifest.UploadUnreadable, "upload %s: its %d bytes are not the upload the store recorded (size %d, BLAKE3 %s)", r.id, n, r.size, r.blake3)
	}
	return nil
}

// intact reports whether the copy at rel is r's upload: a regular read-only file of its size and
// BLAKE3.
func intact(root *os.Root, rel string, r *ref) bool { return intactFile(root, rel, r.size, r.blake3) }
