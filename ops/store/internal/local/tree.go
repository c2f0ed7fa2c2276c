//go:build unix

package local

// Folder uploads (store.Trees): their layout and durability are docs/store.md, "Folder uploads"
// and the layout above it.

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// partialTree is the folder inside a folder upload's partial that holds its files so far.
const partialTree = "tree"

var (
	_ store.TreeBackend = (*localStore)(nil)
	_ store.TreePartial = (*partial)(nil)
)

// The local store's folder uploads are the rules of package store (store.UploadTree, ...) over
// these primitives: one file after another in the order of their paths (store.FileTreeWrite keeps
// the folder of the last file open), each written without an fsync and made durable by the one
// commit of PublishTree.

func (s *localStore) TreeProperties() store.TreeProperties {
	return store.TreeProperties{Jobs: 1, VerifyJobs: 1}
}

// TreeHashFirst: a source without its BLAKE3 is hashed first only when a finished upload of its
// name and size may be there to name again.
func (s *localStore) TreeHashFirst(_ context.Context, name string, size int64) (bool, error) {
	return s.idx.MayHave(s, name, size), nil
}

// StartTree finds a finished upload of the tree in the index, else takes up the unfinished
// upload of the same folder that no one else holds, or makes one, and writes its tree in the
// partial (store.WritePartialTree).
func (s *localStore) StartTree(_ context.Context, st store.TreeStart) (string, store.TreeWrite, error) {
	if id := s.idx.Find(s, st.Blake3, st.Src.Name, st.Avoid); id != "" {
		return id, nil, nil
	}
	p, _, err := s.takePartial(st.Of(), st.Size)
	if err != nil {
		return "", nil, err
	}
	w, err := store.WritePartialTree(p, st.Src.Name, fileSyncEach)
	if err != nil {
		return "", nil, err
	}
	return "", w, nil
}

// TreeDirs opens (making what is missing) tree/<name> in the locked partial, as store.TreePartial
// (fdDirs). What a finish killed after it moved the folder into out/ left there is removed as the
// partial is locked (lockPartial): its files are written again.
func (p *partial) TreeDirs(name string) (store.FileDirs, func(), error) {
	path := filepath.Join(p.dir, partialTree, name)
	fd, err := openDirs(int(p.dirf.Fd()), p.dir, ownDir, partialTree, name)
	if err != nil {
		return nil, nil, err
	}
	root, err := fsOf(fd)
	if err != nil {
		unix.Close(fd)
		return nil, nil, storeErr(path, err)
	}
	return fdDirs{fd: fd, path: path, root: root, code: storeErr}, func() { unix.Close(fd) }, nil
}

// Touch: the partial was written now (its info.json's time: a sweep's cutoff for unfinished
// uploads).
func (p *partial) Touch() { unix.Futimes(int(p.f.Fd()), nil) }

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

// removeEntry removes what is at name in the folder dirfd, a file, a link or a folder, never
// following a link and never leaving dirfd's file system (removeAt).
func removeEntry(dirfd int, name string) error { return removeAt(dirfd, name, nil) }

// PublishTree makes the locked partial's tree a finished upload as a file upload's is made one
// (build, then commit): out/ holds .upload.json, .tree.b3 and tree/<name>, made durable with the
// tree's files, and is renamed to STORE/<id>.
func (p *partial) PublishTree(m *store.TreeMeta, listing []byte) error {
	o, err := p.build(&m.Info, outFile{MetaName, m.Encode()}, outFile{store.TreeListName, listing})
	if err != nil {
		return err
	}
	return o.commit()
}

// ReadTreeObject reads .upload.json or .tree.b3 of the finished upload id through the guarded
// open (store.ReadUploadObject).
func (s *localStore) ReadTreeObject(_ context.Context, id, name string) ([]byte, string, error) {
	return store.ReadUploadObject(s, id, name)
}

// OpenTreeObject is the guarded open of a file of a finished folder upload.
func (s *localStore) OpenTreeObject(_ context.Context, id, name, rel string) (io.ReadCloser, error) {
	return s.openUploadFile(id, name+"/"+rel)
}

// ReadTreeDir checks the upload's own folder (dir "") as a file upload's is checked, and lists
// the folder dir below it: each entry's type as lstat gives it, a folder's owner and mode
// checked, and one on another file system not entered (store.ReadUploadDir over UploadDirs).
func (s *localStore) ReadTreeDir(_ context.Context, ti *store.TreeInfo, dir string) ([]store.TreeEntry, error) {
	return store.ReadUploadDir(s, ti, dir)
}

// fdDirs is store.FileDirs over the open folder fd at path (the caller's): its folders opened by
// openDirs, made where missing as a partial's tree is (ownDir), else opened with errors coded by
// code; a folder on another file system than root is not entered. Its files are the upload id's
// for the guarded open's messages ("": a partial's).
type fdDirs struct {
	fd   int
	path string
	root fsID
	id   string
	code func(path string, err error) error
}

func (d fdDirs) OpenDir(rel string, create bool) (store.FileDir, error) {
	step := openOnly(d.code)
	if create {
		step = ownDir
	}
	fd, err := openDirs(d.fd, d.path, step, strings.Split(rel, "/")...)
	if err != nil {
		return nil, err
	}
	return fdDir{fd, filepath.Join(d.path, rel), d}, nil
}

// fdDir is one folder of fdDirs, open as fd at path.
type fdDir struct {
	fd   int
	path string
	fdDirs
}

func (d fdDir) at(name string) string { return d.path + "/" + name }

func (d fdDir) Names() ([]string, error) {
	names, err := namesAt(d.fd, d.path)
	if err != nil {
		return nil, d.code(d.path, err)
	}
	return names, nil
}

func (d fdDir) Stat(name string) (store.FileStat, error) {
	var st unix.Stat_t
	at, err := d.path, error(nil)
	if name == "" {
		err = unix.Fstat(d.fd, &st)
	} else {
		at, err = d.at(name), unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err != nil {
		return store.FileStat{}, d.code(at, err)
	}
	return statOf(name, &st), nil
}

func (d fdDir) Elsewhere(name string) (bool, error) {
	sub, err := openDirAt(d.fd, name)
	if err != nil {
		return false, d.code(d.at(name), err)
	}
	defer unix.Close(sub)
	id, err := fsOf(sub)
	return err != nil || id != d.root, nil
}

func (d fdDir) Open(name string) (io.ReadCloser, store.FileStat, error) {
	var fst store.FileStat
	at := d.at(name)
	check := guarded(at, d.id)
	f, err := openFileAt(d.fd, name, at, unix.O_RDONLY, func(st *unix.Stat_t) error {
		fst = statOf(name, st) // the stat the guarded open's check takes: the open file's
		return check(st)
	})
	if err != nil {
		return nil, store.FileStat{}, guardErr(d.id)(at, err) // coded as openGuarded codes it
	}
	return f, fst, nil
}

// Create makes the file read-only at once (the descriptor O_CREAT returns writes whatever the
// mode).
func (d fdDir) Create(name string) (store.TreeFileWrite, error) {
	out, err := createAt(d.fd, name, d.at(name), unix.O_WRONLY, ReadOnlyMode, nil)
	if err != nil {
		return nil, err
	}
	return treeFileWrite{out}, nil
}

func (d fdDir) Remove(name string) error {
	if err := removeEntry(d.fd, name); err != nil {
		return storeErr(d.at(name), err)
	}
	return nil
}

func (d fdDir) Sync() error {
	if err := unix.Fsync(d.fd); err != nil {
		return storeErr(d.path, err)
	}
	return nil
}

func (d fdDir) Close() { unix.Close(d.fd) }
