//go:build unix

package local

// Folder uploads (store.Trees): their layout and durability are docs/store.md, "Folder uploads"
// and the layout above it.

import (
	"context"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// partialTree is the folder inside a folder upload's partial that holds its files so far.
const partialTree = "tree"

type treeMeta = store.TreeMeta

var _ store.TreeBackend = (*localStore)(nil)

// The local store's folder uploads are the rules of package store (store.UploadTree, ...) over
// these primitives: one file after another in the order of their paths (treeWrite keeps the
// folder of the last file open), each written without an fsync and made durable by the one
// commit of publishTree.

func (s *localStore) TreeProperties() store.TreeProperties {
	return store.TreeProperties{Jobs: 1, VerifyJobs: 1}
}

// TreeHashFirst: a source without its BLAKE3 is hashed first only when a finished upload of its
// name and size may be there to name again.
func (s *localStore) TreeHashFirst(_ context.Context, name string, size int64) (bool, error) {
	return s.idx.MayHave(s, name, size), nil
}

// StartTree finds a finished upload of the tree in the index, else takes up the unfinished
// upload of the same folder that no one else holds, or makes one.
func (s *localStore) StartTree(_ context.Context, st store.TreeStart) (string, store.TreeWrite, error) {
	if id := s.idx.Find(s, st.Blake3, st.Src.Name, st.Avoid); id != "" {
		return id, nil, nil
	}
	p, _, err := s.takePartial(st.Of(), st.Size)
	if err != nil {
		return "", nil, err
	}
	root, err := p.openTreeRoot(st.Src.Name)
	if err != nil {
		p.close()
		return "", nil, err
	}
	return "", &treeWrite{p: p, root: root}, nil
}

// treeWrite is store.TreeWrite: the locked partial of a folder upload, its files written in the
// order of their paths, the folder of the last file kept open.
type treeWrite struct {
	p    *partial
	n    int
	root *os.File // tree/<name>
	dir  string   // the folder of the last file's path from root ("." root itself), open as dirf
	dirf *os.File
}

func (t *treeWrite) ID() string { return t.p.id }

// Stored opens the copy of f a killed run left in the partial through the guarded open, when it
// is read-only, as a finished upload's files are.
func (t *treeWrite) Stored(f store.TreeFile) (io.ReadCloser, error) {
	dir, err := t.dirFor(f.Rel)
	if err != nil {
		return nil, err
	}
	base := path.Base(f.Rel)
	have, err := openGuarded(int(dir.Fd()), base, dir.Name()+"/"+base, "")
	if err != nil {
		return nil, nil
	}
	if fi, err := have.Stat(); err != nil || fi.Mode().Perm() != ReadOnlyMode {
		have.Close()
		return nil, nil
	}
	return have, nil
}

// Create makes the partial's copy of f anew, read-only at once (the descriptor O_CREAT returns
// writes whatever the mode): a resume keeps it only if it is whole and equal to the source.
func (t *treeWrite) Create(_ context.Context, f store.TreeFile, _ store.TreeSourceFile, there bool) (store.TreeFileWrite, error) {
	dir, err := t.dirFor(f.Rel)
	if err != nil {
		return nil, err
	}
	base := path.Base(f.Rel)
	dst := dir.Name() + "/" + base
	if there { // what Stored did not keep is replaced
		if err := removeEntry(int(dir.Fd()), base); err != nil {
			return nil, storeErr(dst, err)
		}
	}
	out, err := createAt(int(dir.Fd()), base, dst, unix.O_WRONLY, ReadOnlyMode, nil)
	if err != nil {
		return nil, err
	}
	return treeFileWrite{out}, nil
}

// ReadDir lists the folder dir of the partial's tree as ReadTreeDir lists a finished one.
func (t *treeWrite) ReadDir(_ context.Context, dir string) ([]store.TreeEntry, error) {
	root, err := fsOf(int(t.root.Fd()))
	if err != nil {
		return nil, storeErr(t.root.Name(), err)
	}
	es, err := readTreeDir(int(t.root.Fd()), dir, root)
	if err != nil {
		return nil, storeErr(path.Join(t.root.Name(), dir), err)
	}
	return es, nil
}

// Remove removes the entries rels of the partial's tree, each folder on the way opened without
// following a link, never leaving the file system.
func (t *treeWrite) Remove(_ context.Context, rels []string) error {
	for _, rel := range rels {
		fd, err := openDirs(int(t.root.Fd()), t.root.Name(), openOnly(storeErr), strings.Split(path.Dir(rel), "/")...)
		if err != nil {
			return err
		}
		err = removeEntry(fd, path.Base(rel))
		unix.Close(fd)
		if err != nil {
			return storeErr(t.root.Name()+"/"+rel, err)
		}
	}
	return nil
}

// Publish publishes the partial (publishTree), where files are fsynced one by one its folders
// fsynced first.
func (t *treeWrite) Publish(_ context.Context, m *store.TreeMeta, files []store.TreeFile, listing []byte) error {
	t.closeDir()
	if fileSyncEach {
		if err := t.syncDirs(files); err != nil {
			return err
		}
	}
	return t.p.publishTree(m, listing)
}

func (t *treeWrite) Close(error) {
	t.closeDir()
	t.root.Close()
	t.p.close()
}

// treeFileWrite is one file of the partial being written.
type treeFileWrite struct{ out *os.File }

func (w treeFileWrite) Write(b []byte) (int, error) {
	n, err := w.out.Write(b)
	return n, wrap(w.out.Name(), err)
}

// Commit closes the file, fsynced first where files are fsynced one by one.
func (w treeFileWrite) Commit(context.Context, string) error {
	var err error
	if fileSyncEach {
		err = wrap(w.out.Name(), w.out.Sync())
	}
	if cerr := w.out.Close(); err == nil {
		err = wrap(w.out.Name(), cerr)
	}
	return err
}

func (w treeFileWrite) Abort() { w.out.Close() }

// openTreeRoot opens (making what is missing) tree/<name> in the locked partial. What a finish
// killed after it moved the folder into out/ left there is removed as the partial is locked
// (lockPartial): its files are written again.
func (p *partial) openTreeRoot(name string) (*os.File, error) {
	fd, err := openDirs(int(p.dirf.Fd()), p.dir, ownDir, partialTree, name)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), filepath.Join(p.dir, partialTree, name)), nil
}

// dirFor returns the open folder that holds rel, opening or making the folders on the way (what
// stood in the way of one the engine removed first): the files come in the order of their
// paths, so most share the last one's.
func (t *treeWrite) dirFor(rel string) (*os.File, error) {
	if t.n++; t.n%256 == 0 {
		unix.Futimes(int(t.p.f.Fd()), nil) // the partial was written now: a sweep's cutoff for unfinished uploads
	}
	dir := path.Dir(rel)
	if t.dirf != nil && t.dir == dir {
		return t.dirf, nil
	}
	t.closeDir()
	fd, err := openDirs(int(t.root.Fd()), t.root.Name(), ownDir, strings.Split(dir, "/")...)
	if err != nil {
		return nil, err
	}
	t.dir, t.dirf = dir, os.NewFile(uintptr(fd), filepath.Join(t.root.Name(), dir))
	return t.dirf, nil
}

func (t *treeWrite) closeDir() {
	if t.dirf != nil {
		t.dirf.Close()
		t.dirf = nil
	}
}

// syncDirs fsyncs every folder of the tree, each once: where files are fsynced as they are
// closed, the names made in the folders are made durable here.
func (t *treeWrite) syncDirs(files []store.TreeFile) error {
	for _, dir := range store.TreeDirs(files) {
		fd, err := openDirs(int(t.root.Fd()), t.root.Name(), openOnly(storeErr), strings.Split(dir, "/")...)
		if err != nil {
			return err
		}
		err = unix.Fsync(fd)
		unix.Close(fd)
		if err != nil {
			return storeErr(filepath.Join(t.root.Name(), dir), err)
		}
	}
	return nil
}

// removeEntry removes what is at name in the folder dirfd, a file, a link or a folder, never
// following a link and never leaving dirfd's file system (removeAt).
func removeEntry(dirfd int, name string) error { return removeAt(dirfd, name, nil) }

// publishTree makes the locked partial's tree a finished upload as a file upload's is made one
// (build, then commit): out/ holds .upload.json, .tree.b3 and tree/<name>, made durable with the
// tree's files, and is renamed to STORE/<id>.
func (p *partial) publishTree(m *treeMeta, listing []byte) error {
	o, err := p.build(&m.Info, outFile{MetaName, m.Encode()}, outFile{store.TreeListName, listing})
	if err != nil {
		return err
	}
	return o.commit()
}

// ReadTreeObject reads .upload.json or .tree.b3 of the finished upload id through the guarded
// open.
func (s *localStore) ReadTreeObject(_ context.Context, id, name string) ([]byte, string, error) {
	f, err := s.openUploadFile(id, name)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(store.TreeObjectMax)+1))
	if err != nil {
		return nil, f.Name(), fault.Errorf(fault.UploadUnreadable, "upload %s: %s is damaged", id, f.Name())
	}
	return b, f.Name(), nil
}

// OpenTreeObject is the guarded open of a file of a finished folder upload.
func (s *localStore) OpenTreeObject(_ context.Context, id, name, rel string) (io.ReadCloser, error) {
	return s.openUploadFile(id, name+"/"+rel)
}

// ReadTreeDir checks the upload's own folder (dir "") as a file upload's is checked (checkTop),
// and lists the folder dir below it, each folder on the way opened from the store down without
// following a link: each entry's type as lstat gives it, a folder's owner and mode checked, and
// one on another file system not entered.
func (s *localStore) ReadTreeDir(_ context.Context, ti *store.TreeInfo, dir string) ([]store.TreeEntry, error) {
	top, err := s.openDir(guardErr(ti.ID), false, ti.ID)
	if err != nil {
		return nil, err
	}
	defer unix.Close(top)
	if dir == "" { // checkTop refuses anything there that is no part of the upload: none to name
		return nil, s.checkTop(top, ti.ID, ti.Name, true)
	}
	root, err := fsOf(top)
	if err != nil {
		return nil, guardErr(ti.ID)(s.UploadDir(ti.ID), err)
	}
	name, sub, _ := strings.Cut(dir, "/")
	fd, err := openDirs(top, s.UploadDir(ti.ID), openOnly(guardErr(ti.ID)), name)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	es, err := readTreeDir(fd, sub, root)
	if err != nil {
		return nil, fault.Errorf(fault.UploadUnreadable, "upload %s: %s: %v", ti.ID, s.FinishedPath(ti.ID, ti.Name), err)
	}
	return es, nil
}

// readTreeDir lists the folder dir below the open folder top (which stays the caller's), on the
// file system root.
func readTreeDir(top int, dir string, root fsID) ([]store.TreeEntry, error) {
	fd, err := openDirs(top, "", openOnly(sysErr), strings.Split(dir, "/")...)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	sts, err := statEntries(fd, dir, sysErr)
	if err != nil {
		return nil, err
	}
	es := make([]store.TreeEntry, len(sts))
	for i, st := range sts {
		es[i] = st.TreeEntry()
		if !es[i].Dir {
			continue
		}
		sub, err := openDirAt(fd, st.Name)
		if err != nil {
			return nil, err
		}
		if id, err := fsOf(sub); err != nil || id != root {
			es[i].Skip = "another file system mounted there; not entered"
		}
		unix.Close(sub)
	}
	return es, nil
}
