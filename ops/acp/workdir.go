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
	"strconv"
	"strings"

	"github.com/zeebo/blake3"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
)

// Modes in a work folder: the copies are read-only and, like the store's files, the owner's only.
const (
	workDirMode  os.FileMode = 0o700
	workFileMode os.FileMode = 0o400
)

// copyPath is where the work folder dir keeps its copy of upload id's file name.
func copyPath(dir, id, name string) string { return filepath.Join(dir, id, name) }

// The work folder (--workdir) holds a copy of every file of a resolved prompt, inline ones too,
// at DIR/<id>/<name>: the agent's tools open the full file there. It is trusted only when it is
// ours: the folder and every <id> folder real folders owned by the user that no one else may
// write, every copy a regular file owned by the user, not group- or other-writable, with one hard
// link. Anything else is upload.unreadable and nothing is linked. A copy that is missing is made
// (written beside, checked by BLAKE3, renamed into place); one that is not the upload's bytes any
// more was changed by the agent and is never overwritten: the link names it and the context
// block says so. Every path is opened below DIR (os.Root): a link inside it cannot lead out.

// tmpPrefix starts the name a copy is written under before it is renamed into place; the
// writer's process id follows, so that a later run can tell a dead run's leftover.
const tmpPrefix = ".attachctl-"

// tmpIn is a new name for a copy being written, in the upload's folder id of the work folder:
// named by this process, so that cleanTemps removes it once the process is gone (killed), and
// never inside a folder upload's tree, where the agent reads.
func tmpIn(id string) string {
	return filepath.Join(id, fmt.Sprintf("%s%d-%s.tmp", tmpPrefix, os.Getpid(), rand.Text()))
}

// checkWork looks at the work folder's copies before anything is planned or marked: it sets
// each reference's copy state, and refuses a work folder that is not ours.
func checkWork(dir string, refs []*ref) error {
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		for _, r := range refs {
			if r != nil {
				r.copy = copyMissing
			}
		}
		return nil
	case err != nil:
		return fault.Errorf(fault.UploadUnreadable, "work folder %s: %v", manifest.Quote(dir), err)
	}
	if why := untrusted(fi, true); why != "" {
		return fault.Errorf(fault.UploadUnreadable, "work folder %s: %s: nothing is linked into a folder that is not the user's own", manifest.Quote(dir), why)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fault.Errorf(fault.UploadUnreadable, "work folder %s: %v", manifest.Quote(dir), err)
	}
	defer root.Close()
	errs := eachRef(refs, func(_ int, r *ref) (err error) {
		r.copy, err = copyStateOf(root, r)
		return err
	})
	for i, err := range errs {
		if err != nil {
			return atBlock(i, err)
		}
	}
	return nil
}

// copyStateOf is what is at r's copy under root.
func copyStateOf(root *os.Root, r *ref) (copyState, error) {
	refuse := func(what, why string) error {
		return fault.Errorf(fault.UploadUnreadable, "upload %s: work copy %s: %s %s: nothing is linked into a folder that is not the user's own", r.id, manifest.Quote(r.link), what, why)
	}
	fi, err := root.Lstat(r.id)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return copyMissing, nil
	case err != nil:
		return 0, refuse("its folder", err.Error())
	}
	if why := untrusted(fi, true); why != "" {
		return 0, refuse("its folder", why)
	}
	if r.folder != nil { // a folder upload's tree is checked file by file as it is copied
		return copyMissing, nil
	}
	rel := filepath.Join(r.id, r.name)
	fi, err = root.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return copyMissing, nil
	case err != nil:
		return 0, refuse("the copy", err.Error())
	}
	if why := untrusted(fi, false); why != "" {
		return 0, refuse("the copy", why)
	}
	if fi.Size() == r.size && sameBytes(root, rel, fi, r) {
		r.copyInfo = fi
		return copyIntact, nil
	}
	return copyChanged, nil
}

// untrusted says why fi (a folder when dir) is not the user's own, or "".
func untrusted(fi os.FileInfo, dir bool) string {
	switch {
	case dir && !fi.IsDir():
		return "not a real folder"
	case !dir && !fi.Mode().IsRegular():
		return "not a regular file"
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Sprintf("writable by others (mode %04o)", fi.Mode().Perm())
	}
	if uid, links, ok := owner(fi); ok {
		if uid != os.Getuid() {
			return fmt.Sprintf("owned by uid %d, not the user (uid %d)", uid, os.Getuid())
		}
		if !dir && links != 1 {
			return fmt.Sprintf("%d hard links to it", links)
		}
	}
	return ""
}

// copyOut makes every missing copy of the resolved prompt's files (checkWork has looked at them
// all), cleaning first what a killed run left in their folders.
func (res *Resolution) copyOut(u Uploads, dir string) error {
	if err := os.MkdirAll(dir, workDirMode); err != nil {
		return fault.Errorf(fault.UploadUnreadable, "work folder %s: %v", manifest.Quote(dir), err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fault.Errorf(fault.UploadUnreadable, "work folder %s: %v", manifest.Quote(dir), err)
	}
	defer root.Close()
	if err := res.workFolder(root, dir); err != nil { // checked again before output (recheckWork)
		return err
	}
	done := map[string]bool{}
	todo := make([]*ref, len(res.refs)) // each upload once
	for i, r := range res.refs {
		if r == nil || done[r.id] {
			continue
		}
		done[r.id] = true
		switch r.copy {
		case copyMissing:
			todo[i] = r
		case copyIntact:
			res.Reused++
		case copyChanged:
			res.Changed++
		}
	}
	errs := eachRef(todo, func(i int, r *ref) error { return copyOne(root, u, r) })
	for i, r := range todo {
		switch {
		case r == nil:
		case errs[i] != nil:
			return atBlock(i, errs[i])
		case r.copy == copyIntact:
			res.Reused++
		default:
			res.Copied++
		}
	}
	return nil
}

// copyOne puts r's missing copy in place under root, never over a file that is there.
func copyOne(root *os.Root, u Uploads, r *ref) error {
	fail := func(err error) error {
		return fault.Errorf(fault.UploadUnreadable, "upload %s: work copy %s: %v", r.id, manifest.Quote(r.link), err)
	}
	fi, err := root.Lstat(r.id)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := root.Mkdir(r.id, workDirMode); err != nil {
			return fail(err)
		}
		if err := root.Chmod(r.id, workDirMode); err != nil { // whatever the umask
			return fail(err)
		}
	case err != nil:
		return fail(err)
	case !fi.IsDir():
		return fail(fmt.Errorf("%s is not a real folder", filepath.Dir(r.link)))
	default:
		cleanTemps(root, r.id)
	}
	if r.folder != nil { // a folder upload's tree: copyFolder keeps each file that is whole
		kept, err := copyFolder(root, r)
		if kept && err == nil {
			r.copy = copyIntact // the whole tree was there: reused, not copied
		}
		return err
	}
	rel := filepath.Join(r.id, r.name)
	tmp := tmpIn(r.id)
	out, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, workFileMode)
	if err != nil {
		return fail(err)
	}
	err = fillCopy(out, u, r)
	if cerr := out.Close(); err == nil && cerr != nil {
		err = fail(cerr)
	}
	if err == nil {
		// A hard link, not a rename: it fails if a file appeared at rel meanwhile, so that
		// nothing the agent made there is replaced.
		if lerr := root.Link(tmp, rel); lerr != nil {
			err = fail(lerr)
		}
	}
	root.Remove(tmp)
	if err == nil {
		if fi, lerr := root.Lstat(rel); lerr == nil {
			r.copyInfo = fi // what fillCopy checked, now with one link
		}
	}
	return err
}

// cleanTemps removes the copies a killed resolve left half-written in the folder id: those of
// a process that is no longer running.
func cleanTemps(root *os.Root, id string) {
	f, err := root.Open(id)
	if err != nil {
		return
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	for _, n := range names {
		rest, ok := strings.CutPrefix(n, tmpPrefix)
		if !ok || !strings.HasSuffix(n, ".tmp") {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		if pid, err := strconv.Atoi(pidText); err == nil && pid != os.Getpid() && !running(pid) {
			root.Remove(filepath.Join(id, n))
		}
	}
}

// fillCopy copies r's upload into out, hashing it, and checks the bytes against the upload's
// recorded size and BLAKE3.
func fillCopy(out *os.File, u Uploads, r *ref) error {
	if err := out.Chmod(workFileMode); err != nil { // whatever the umask
		return fault.Errorf(fault.UploadUnreadable, "upload %s: work copy: %v", r.id, err)
	}
	f, err := u.Open(r.id, r.name)
	if err != nil {
		return err
	}
	defer f.Close()
	h := blake3.New()
	n, err := io.Copy(io.MultiWriter(out, h), f)
	if err != nil {
		if fault.CodeOf(err) != "" {
			return err // the store's own words and code (store.unreachable: the server went away)
		}
		return fault.Errorf(fault.UploadUnreadable, "upload %s: work copy %s: %v", r.id, r.link, err)
	}
	if n != r.size || hex.EncodeToString(h.Sum(nil)) != r.blake3 {
		return fault.Errorf(fault.UploadUnreadable, "upload %s: its %d bytes are not the upload the store recorded (size %d, BLAKE3 %s)", r.id, n, r.size, r.blake3)
	}
	return nil
}

// sameBytes reports whether the file at rel (fi, as Lstat saw it) holds r's upload: its size
// and BLAKE3.
func sameBytes(root *os.Root, rel string, fi os.FileInfo, r *ref) bool {
	f, err := root.Open(rel)
	if err != nil {
		return false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !os.SameFile(fi, st) {
		return false
	}
	h := blake3.New()
	if n, err := io.Copy(h, f); err != nil || n != r.size {
		return false
	}
	return hex.EncodeToString(h.Sum(nil)) == r.blake3
}

// copyState is what resolve found of a reference's copy in the work folder.
type copyState int

const (
	copyNone    copyState = iota // no work folder
	copyMissing                  // not there: made
	copyIntact                   // the upload's bytes: kept
	copyChanged                  // the agent changed it: kept, never overwritten
)
