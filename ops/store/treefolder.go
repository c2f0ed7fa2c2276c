package store

import (
	"context"
	"io"
	"strings"

	"github.com/attachctl/attachctl/manifest/fault"
)

// Finished uploads kept as folders of files on this machine (the local store): how one is read
// (its metadata and a folder upload's listing through the guarded open, a small upload's metadata
// from its commit's file), what verify demands of its own folder, how a mode repair reads it, and
// how a folder upload's folders are listed, written once over the folders the backend opens
// (UploadFolders).

// UploadFolders is what a backend that keeps each finished upload as a folder of files gives the
// rules below. Its folders' Open is the guarded open of docs/store.md.
type UploadFolders interface {
	// UploadDir is the path of the folder of the upload id, for messages.
	UploadDir(id string) string
	// OpenUpload opens the folder of the finished upload id, each folder from the store down
	// opened without following a link; its errors, and those of its Open, coded as the guarded
	// open of upload id codes them: upload.missing when it is not there.
	OpenUpload(id string) (FileDir, error)
	// UploadDirs are the folders below top (a folder in the folder of the finished upload id):
	// top opened as OpenUpload opens the upload's folder, and each folder below it without
	// following a link, their errors the system's; a folder on another file system than the
	// upload's folder is not entered (FileDir.Elsewhere). done closes them.
	UploadDirs(id, top string) (dirs FileDirs, done func(), err error)
	// StoreDirs are the store's own folder and those below it, their errors the system's. done
	// closes them.
	StoreDirs() (dirs FileDirs, done func(), err error)
	// IndexedMeta is the metadata of the finished upload id kept in its commit's file, not in its
	// folder (a small upload of a batch; MetaIndex.Find).
	IndexedMeta(id string) (*Info, error)
}

// ReadUploadObject is TreeBackend.ReadTreeObject over u: the small file name (MetaName or
// TreeListName) of the finished upload id read through the guarded open (ReadFolderObject), its
// folder opened first.
func ReadUploadObject(u UploadFolders, id, name string) ([]byte, string, error) {
	d, err := u.OpenUpload(id)
	if err != nil {
		return nil, "", err
	}
	defer d.Close()
	return ReadFolderObject(d, id, u.UploadDir(id), name)
}

// ReadFolderObject reads whole the file name (MetaName or TreeListName) of the finished upload id
// from its open folder d at dir through the guarded open (FileDir.Open), and where it is: a folder
// upload's names each file's size, so up to TreeObjectMax bytes and one more, which tells one too
// long. A read that fails is upload.unreadable.
func ReadFolderObject(d FileDir, id, dir, name string) ([]byte, string, error) {
	where := dir + "/" + name
	r, _, err := d.Open(name)
	if err != nil {
		return nil, where, err
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, int64(TreeObjectMax)+1))
	if err != nil {
		return nil, where, fault.Errorf(fault.UploadUnreadable, "upload %s: %s: %v", id, where, err)
	}
	return b, where, nil
}

// ReadUploadMeta reads the metadata of the finished upload id (UploadMetaIn), its folder opened
// first.
func ReadUploadMeta(u UploadFolders, id string) (*TreeMeta, error) {
	if err := ValidID(id); err != nil {
		return nil, err
	}
	d, err := u.OpenUpload(id)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return UploadMetaIn(u, d, id)
}

// UploadMetaIn reads the metadata of the finished upload id from its open folder d, left open: a
// folder upload's carries its kind and files too (a listing's Entry shows them); a small upload of
// a batch keeps none there, and its commit's file gives it (IndexedMeta).
func UploadMetaIn(u UploadFolders, d FileDir, id string) (*TreeMeta, error) {
	b, where, err := ReadFolderObject(d, id, u.UploadDir(id), MetaName)
	return metaObject(id, b, where, err, func() (*Info, error) { return u.IndexedMeta(id) })
}

// metaObject is the metadata of upload id read as b from where (err: the read's). When the upload
// keeps none there, other says what it is (a file upload's metadata kept elsewhere), and its
// error is the answer: it says why the upload is missing, or that it is damaged.
func metaObject(id string, b []byte, where string, err error, other func() (*Info, error)) (*TreeMeta, error) {
	if fault.CodeOf(err) == fault.UploadMissing {
		info, err := other()
		if err != nil {
			return nil, err
		}
		return &TreeMeta{Info: *info}, nil
	}
	if err != nil {
		return nil, err
	}
	if len(b) > TreeObjectMax {
		return nil, fault.Errorf(fault.UploadUnreadable, "upload %s: %s is damaged", id, where)
	}
	return ParseTreeMeta(id, b, where)
}

// FoldersOn is Checker and Moder over the UploadFolders its call gives (CheckUpload,
// UploadWrongMode): the rules below over a backend's folders, the store opened for a read first.
type FoldersOn func() (UploadFolders, error)

// Check checks the id before the store is opened, as every call of OpenCalls does: a bad id is
// upload.invalid wherever it is asked.
func (on FoldersOn) Check(_ context.Context, id string) error {
	if err := ValidID(id); err != nil {
		return err
	}
	u, err := on()
	if err != nil {
		return err
	}
	return CheckUpload(u, id)
}

// WrongMode finds none when the id is not one or the store cannot be opened.
func (on FoldersOn) WrongMode(_ context.Context, id string) (ModeRepair, bool) {
	if ValidID(id) != nil {
		return ModeRepair{}, false
	}
	u, err := on()
	if err != nil {
		return ModeRepair{}, false
	}
	return UploadWrongMode(u, id)
}

// CheckUpload is Checker.Check over u: the folder of the file upload id, opened once for all the
// check reads of it, is what the store demands (FileFolder.Check), its name read from its
// metadata.
func CheckUpload(u UploadFolders, id string) error {
	return checkUploadFolder(u, id, "", false)
}

// checkUploadFolder opens the folder of the finished upload id named name ("": read from its
// metadata) and checks it as the store demands (FileFolder.Check); tree: a folder upload's.
func checkUploadFolder(u UploadFolders, id, name string, tree bool) error {
	if err := ValidID(id); err != nil {
		return err
	}
	d, err := u.OpenUpload(id)
	if err != nil {
		return err
	}
	defer d.Close()
	if name == "" {
		m, err := UploadMetaIn(u, d, id)
		if err != nil {
			return err
		}
		name = m.Name
	}
	f := FileFolder{ID: id, Dir: u.UploadDir(id), Name: name, Tree: tree}
	if f.Entries, err = StatFileFolder(d); err != nil {
		return err
	}
	return f.Check()
}

// ReadUploadDir is TreeBackend.ReadTreeDir over u: dir "" is the folder upload's own folder,
// checked as a file upload's is (FileFolder.Check, which refuses anything there that is no part
// of the upload: none to name); else the folder dir below it is listed (ListFileDir), the folders
// on the way opened from the store down without following a link.
func ReadUploadDir(u UploadFolders, ti *TreeInfo, dir string) ([]TreeEntry, error) {
	if dir == "" {
		return nil, checkUploadFolder(u, ti.ID, ti.Name, true)
	}
	top, sub, _ := strings.Cut(dir, "/")
	dirs, done, err := u.UploadDirs(ti.ID, top)
	if err != nil {
		return nil, err
	}
	defer done()
	es, err := ListFileDir(dirs, sub)
	if err != nil {
		return nil, fault.Errorf(fault.UploadUnreadable, "upload %s: %s/%s: %v", ti.ID, u.UploadDir(ti.ID), ti.Name, err)
	}
	return es, nil
}

// UploadWrongMode is Moder.WrongMode over u: the first of the folder of the upload id and the
// regular files in it whose mode is not the one the store's check takes (FileFolder.WrongMode),
// one closed even to the user included. It reads modes only (ReadFileFolder), the metadata not
// needed.
func UploadWrongMode(u UploadFolders, id string) (ModeRepair, bool) {
	if ValidID(id) != nil {
		return ModeRepair{}, false
	}
	f := FileFolder{Dir: u.UploadDir(id)}
	if dirs, done, err := u.StoreDirs(); err == nil {
		f.Entries, _ = ReadFileFolder(dirs, id)
		done()
	}
	return f.WrongMode()
}

// TreePartial is an unfinished folder upload whose files are kept in folders of the backend's
// (the local store's locked partial), written through PartialTreeWrite.
type TreePartial interface {
	ID() string
	// TreeDirs are the folders of the tree named name (FileTreeWrite.Dirs), its top made where
	// missing. done closes them.
	TreeDirs(name string) (dirs FileDirs, done func(), err error)
	// Touch marks the upload written now: a sweep's cutoff for unfinished uploads is their last
	// write.
	Touch()
	// PublishTree makes the tree finished with its metadata m and listing, durable with its
	// files, create-only (TreeWrite.Publish).
	PublishTree(m *TreeMeta, listing []byte) error
	Close()
}

// WritePartialTree is the TreeWrite of the tree named name in the partial p, taken up or made by
// StartTree: its files written one after another through a FileTreeWrite over p's folders.
// syncEach: the backend makes each file durable as it is closed (TreeFileWrite.Commit), and the
// folders are then made durable before the tree is published. p is closed when it fails.
func WritePartialTree(p TreePartial, name string, syncEach bool) (*PartialTreeWrite, error) {
	dirs, done, err := p.TreeDirs(name)
	if err != nil {
		p.Close()
		return nil, err
	}
	return &PartialTreeWrite{FileTreeWrite: FileTreeWrite{Dirs: dirs, Touch: p.Touch}, p: p, done: done, syncEach: syncEach}, nil
}

// PartialTreeWrite is the TreeWrite WritePartialTree returns.
type PartialTreeWrite struct {
	FileTreeWrite
	p        TreePartial
	done     func()
	syncEach bool
}

func (t *PartialTreeWrite) ID() string { return t.p.ID() }

// Publish closes the folder kept open and publishes the partial, its folders made durable first
// where each file is made durable as it is closed.
func (t *PartialTreeWrite) Publish(_ context.Context, m *TreeMeta, files []TreeFile, listing []byte) error {
	t.CloseDir()
	if t.syncEach {
		if err := t.SyncDirs(files); err != nil {
			return err
		}
	}
	return t.p.PublishTree(m, listing)
}

func (t *PartialTreeWrite) Close(error) {
	t.CloseDir()
	t.done()
	t.p.Close()
}
