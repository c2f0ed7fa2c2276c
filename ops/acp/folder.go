package acp

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/zeebo/blake3"
	"golang.org/x/sync/errgroup"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/sniff"
)

// Folder uploads in resolve. A folder upload is one reference like a file: one resource_link to
// the folder (file://, the store's folder, or with a work folder the copy of its tree there),
// mimeType inode/directory, size its bytes, and the context block lists its tree (each file's
// path from the folder and size) under the folder's line while the message has room, then
// "and N more". Nothing inside a folder goes inline unless asked (Options.InlineFromFolders,
// below): the agent reads the folder with its tools.

// FolderUploads is what resolve asks of a store that keeps folder uploads (an optional feature
// of Uploads).
type FolderUploads interface {
	// OpenFolder checks the finished folder upload id named name and returns its listing. Not a
	// folder upload: upload.invalid; not there: upload.missing.
	OpenFolder(id, name string) (*Folder, error)
}

// Folder is one finished folder upload.
type Folder struct {
	Path   string // the folder on this machine; "" when the store has no local files
	Size   int64
	Blake3 string
	Files  []store.TreeFile
	// Open opens one of its files (by its Rel) through the store's guarded open.
	Open func(rel string) (io.ReadCloser, error)
}

// OpenFolder is FolderUploads for a store behind the seam that keeps folders (store.Trees).
func (b backend) OpenFolder(id, name string) (*Folder, error) {
	t := b.b.Features().Trees
	if t == nil {
		return nil, fault.Errorf(fault.UploadInvalid, "upload %s: store %s keeps no folder uploads", id, b.b.Location())
	}
	ti, err := t.TreeInfo(b.ctx, id)
	if err != nil {
		return nil, err
	}
	if ti.Name != name {
		return nil, fault.Errorf(fault.UploadMissing, "upload %s: no finished upload named %s (it is %s)", id, manifest.Quote(name), manifest.Quote(ti.Name))
	}
	f := &Folder{Size: ti.Size, Blake3: ti.Blake3, Files: ti.Files,
		Open: func(rel string) (io.ReadCloser, error) { return t.OpenTreeFile(b.ctx, id, name, rel) }}
	if p := b.b.Features().Pather; p != nil {
		f.Path = p.FinishedPath(id, name)
	}
	return f, nil
}

// examineFolder is examine for a reference whose upload did not open as a file (openErr): when
// the store keeps folders and it is one, r becomes that folder, by path.
func examineFolder(u Uploads, r *ref, opts Options, openErr error) (bool, error) {
	fu, ok := u.(FolderUploads)
	if !ok || fault.CodeOf(openErr) != fault.UploadUnreadable {
		return false, openErr
	}
	f, err := fu.OpenFolder(r.id, r.name)
	if err != nil {
		return false, openErr
	}
	r.folder = f
	r.path, r.size, r.blake3 = f.Path, f.Size, f.Blake3
	r.mime, r.kind = manifest.MimeFolder, manifest.KindFolder
	r.link = r.path
	if opts.Workdir != "" {
		r.link = copyPath(opts.Workdir, r.id, r.name)
	}
	if r.link == "" {
		return true, fault.Errorf(fault.UploadUnreadable, "upload %s: the store has no local folder to link to: resolve with a work folder (--workdir)", r.id)
	}
	return true, nil
}

// treeLines is the folder's tree for the context block: a line per file, its path from the
// folder and its size, while they fit in room bytes (as escaped in JSON, esc), then "and N
// more". It returns the text and its escaped length.
func treeLines(r *ref, room int64, esc func(string) int64) (string, int64) {
	var sb strings.Builder
	var n int64
	files := r.folder.Files
	more := func(k int) string { return fmt.Sprintf("\n  - and %d more", k) }
	for i, f := range files {
		line := fmt.Sprintf("\n  - %s (%d bytes)%s", escapePath(f.Rel), f.Size, treeNote(r, f.Rel))
		need := esc(line)
		if i < len(files)-1 {
			need += esc(more(len(files) - i - 1))
		}
		if n+need > room {
			m := more(len(files) - i)
			if n+esc(m) <= room {
				sb.WriteString(m)
				n += esc(m)
			}
			break
		}
		sb.WriteString(line)
		n += esc(line)
	}
	return sb.String(), n
}

// copyFolder puts an intact copy of the folder upload r under root (the work folder) at
// <id>/<name>/: each file already there whole (a regular read-only file of its size and BLAKE3)
// is kept, any other is written to a temp file beside the tree (tmpIn), checked against the
// listing, and renamed over it. The folders are made first, then the files are checked and copied treeCopyJobs at once (on S3
// each is a GET: one after another they add up); after a failure no more are started, and the
// failure reported is that of the first file in the listing's order that failed, whatever
// finished first. It reports whether every file was kept.
func copyFolder(root *os.Root, r *ref) (bool, error) {
	fail := func(err error) error {
		return fault.Errorf(fault.UploadUnreadable, "upload %s: work copy %s: %v", r.id, r.link, err)
	}
	if err := mkdirIn(root, r.id); err != nil {
		return false, fail(err)
	}
	top := filepath.Join(r.id, r.name)
	if err := mkdirIn(root, top); err != nil {
		return false, fail(err)
	}
	made := map[string]bool{top: true}
	for _, f := range r.folder.Files {
		if dir := path.Dir(f.Rel); dir != "." && !made[filepath.Join(top, filepath.FromSlash(dir))] {
			at := top
			for _, p := range strings.Split(dir, "/") {
				at = filepath.Join(at, p)
				if made[at] {
					continue
				}
				if err := mkdirIn(root, at); err != nil {
					return false, fail(err)
				}
				made[at] = true
			}
		}
	}
	copied := make([]bool, len(r.folder.Files))
	errs := make([]error, len(r.folder.Files))
	// stop is the listing index of the earliest file that failed: only files after it are left
	// undone. Workers start in any order, so a plain "something failed" flag would also skip files
	// listed before the failure, and the copy would lack files that an ordered copy (cp) has.
	var stop atomic.Int64
	stop.Store(int64(len(r.folder.Files)))
	var g errgroup.Group
	g.SetLimit(treeCopyJobs)
	for i, f := range r.folder.Files {
		if int64(i) > stop.Load() {
			break
		}
		g.Go(func() error {
			if int64(i) > stop.Load() {
				return nil
			}
			rel := filepath.Join(top, filepath.FromSlash(f.Rel))
			if intactFile(root, rel, f.Size, f.Blake3) {
				return nil
			}
			copied[i] = true
			if errs[i] = copyTreeFile(root, r, f, rel); errs[i] != nil {
				for s := stop.Load(); int64(i) < s && !stop.CompareAndSwap(s, int64(i)); s = stop.Load() {
				}
			}
			return nil
		})
	}
	g.Wait()
	for _, err := range errs {
		if err != nil {
			return false, err
		}
	}
	return !slices.Contains(copied, true), nil
}

// treeCopyJobs is how many files of a folder upload copyFolder fetches at once: enough to keep a
// store behind a network busy, as the S3 store's own folder uploads send 16 at once.
const treeCopyJobs = 16

// mkdirIn makes the folder rel under root (0700 whatever the umask) unless it is a real folder
// already; a link or file there is an error.
func mkdirIn(root *os.Root, rel string) error {
	fi, err := root.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := root.Mkdir(rel, workDirMode); err != nil {
			return err
		}
		return root.Chmod(rel, workDirMode)
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s is not a real folder", rel)
	}
	return nil
}

// copyTreeFile writes the upload's file f to rel under root through a temporary file (in the
// upload's folder, beside the tree: tmpIn), checked against its listed size and BLAKE3.
func copyTreeFile(root *os.Root, r *ref, f store.TreeFile, rel string) error {
	tmp := tmpIn(r.id)
	out, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, workFileMode)
	if err != nil {
		return fault.Errorf(fault.UploadUnreadable, "upload %s: work copy %s: %v", r.id, rel, err)
	}
	err = func() error {
		if err := out.Chmod(workFileMode); err != nil {
			return err
		}
		in, err := r.folder.Open(f.Rel)
		if err != nil {
			return err
		}
		defer in.Close()
		h := blake3.New()
		n, err := io.Copy(io.MultiWriter(out, h), in)
		if err != nil {
			return err
		}
		if n != f.Size || hex.EncodeToString(h.Sum(nil)) != f.Blake3 {
			return fmt.Errorf("%s: its %d bytes are not the file the store listed (size %d, BLAKE3 %s)", f.Rel, n, f.Size, f.Blake3)
		}
		return nil
	}()
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		root.Remove(tmp)
		if e, ok := err.(*fault.Error); ok { // the store's code (store.unreachable), and the file
			return fault.Errorf(e.Code, "upload %s: work copy of %s/%s: %s", r.id, r.name, f.Rel, e.Message)
		}
		return fault.Errorf(fault.UploadUnreadable, "upload %s: work copy %s: %v", r.id, rel, err)
	}
	return nil
}

// intactFile reports whether the copy at rel under root is a regular read-only file of size
// bytes hashing to sum.
func intactFile(root *os.Root, rel string, size int64, sum string) bool {
	fi, err := root.Lstat(rel)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != workFileMode || fi.Size() != size {
		return false
	}
	f, err := root.Open(rel)
	if err != nil {
		return false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !os.SameFile(fi, st) {
		return false
	}
	h := blake3.New()
	if n, err := io.Copy(h, f); err != nil || n != size {
		return false
	}
	return hex.EncodeToString(h.Sum(nil)) == sum
}

// Images inside a folder upload (Options.InlineFromFolders). Asked for, each PNG, JPEG, GIF or
// WebP file of a folder (by content, as any upload) becomes a reference of its own, right after
// the folder's block, planned like any image: the protocol's image capability, the adapter, the
// model, --inline-max, the inline budget and the message limit all decide, in prompt order. One
// that goes inline is an image block (its "uri" the file inside the folder); one that does not is
// no block at all, since the folder's link already names it. Both are marked in the folder's
// tree in the context block, and --explain says how each went.

// folderImages returns blocks and refs with the images of every folder reference inserted after
// it (nil blocks: they exist only once inlined).
func folderImages(blocks []object, refs []*ref) ([]object, []*ref, error) {
	var ob []object
	var or []*ref
	for i, r := range refs {
		ob, or = append(ob, blocks[i]), append(or, r)
		if r == nil || r.folder == nil {
			continue
		}
		kids := make([]*ref, len(r.folder.Files))
		errs := eachIndex(len(kids), func(k int) error {
			c, err := folderImage(r, r.folder.Files[k])
			kids[k] = c
			return err
		})
		for _, err := range errs {
			if err != nil {
				return nil, nil, atBlock(i, err)
			}
		}
		for _, c := range kids {
			if c != nil {
				ob, or = append(ob, nil), append(or, c)
			}
		}
		r.images = map[string]*ref{}
		for _, c := range kids {
			if c != nil {
				r.images[c.rel] = c
			}
		}
	}
	return ob, or, nil
}

// folderImage sniffs the folder upload's file f by its head and returns it as a reference when
// it is an image a model takes inline (nil otherwise).
func folderImage(parent *ref, f store.TreeFile) (*ref, error) {
	rc, err := parent.folder.Open(f.Rel)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	buf := make([]byte, min(f.Size, headSize))
	if _, err := io.ReadFull(rc, buf); err != nil {
		return nil, fault.Errorf(fault.UploadUnreadable, "upload %s: %s/%s: %v", parent.id, parent.name, f.Rel, err)
	}
	mime, kind := sniff.Content(buf, int64(len(buf)) == f.Size)
	if !inlineImageTypes[mime] {
		return nil, nil
	}
	c := &ref{typ: "image", id: parent.id, name: parent.name, rel: f.Rel, parent: parent,
		size: f.Size, blake3: f.Blake3, mime: mime, kind: kind, image: true}
	if parent.path != "" {
		c.path = parent.path + "/" + f.Rel
	}
	c.link = parent.link + "/" + f.Rel
	c.width, c.height, _ = sniff.Image(buf)
	c.animated = sniff.Animated(buf)
	c.checkHeader(buf)
	return c, nil
}

// eachIndex runs f on 0..n-1, refJobs at once (a store behind a network answers each open in a
// round trip), and returns their errors by index.
func eachIndex(n int, f func(int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	slots := make(chan struct{}, refJobs)
	for k := range n {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			errs[k] = f(k)
			<-slots
		}()
	}
	wg.Wait()
	return errs
}

// treeNote is what the folder's tree line of the file rel adds when it is one of the folder's
// images asked inline: inline, or why not.
func treeNote(r *ref, rel string) string {
	c := r.images[rel]
	switch {
	case c == nil:
		return ""
	case c.mode == inlineImage:
		return ": inline in this prompt too"
	case c.reason != "":
		s := ": not inline, " + c.reason
		if c.layer != "" {
			s += " (" + c.layer + ")"
		}
		return s
	}
	return ""
}

// inputBlock is the prompt block (as it came) of the planned block i: a folder's image counts as
// its folder's block.
func (res *Resolution) inputBlock(i int) int {
	n := -1
	for _, r := range res.refs[:i+1] {
		if r == nil || !r.child() {
			n++
		}
	}
	return n
}

// emitted reports whether the block of r (nil: a block that passes through) is in the output: every
// block but the images of a folder that did not go inline.
func emitted(r *ref) bool { return r == nil || !r.child() || r.mode != modePath }

// child reports whether r stands for part of another reference's file (an image of a folder, a
// page of a document): no block of its own unless it goes inline.
func (r *ref) child() bool { return r.parent != nil || r.of != nil }

// label names r's file in messages: its upload's name, and for an image inside a folder its path
// there.
func (r *ref) label() string {
	if r.parent != nil {
		return r.name + "/" + r.rel
	}
	if r.of != nil {
		return fmt.Sprintf("%s page %d", r.of.label(), r.page)
	}
	return r.name
}
