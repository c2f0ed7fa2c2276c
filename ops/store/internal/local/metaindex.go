//go:build unix

package local

// The metadata of small uploads built in a batch's staging partial (batch_small.go) is one file
// per commit, STORE/.attachctl/meta/<bid>.<n>, not a .upload.json in each upload's folder. Its
// form, the order a commit writes and places it in, and how readers and the sweep treat it:
// docs/store.md (meta/).

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

const metaDir = "meta"

// metaIndex is what this process has read of STORE/.attachctl/meta. An upload's metadata never
// changes, so what was read stays true; files made since are read on the next miss.
type metaIndex struct {
	mu   sync.Mutex
	byID map[string]*Meta // nil: named by two files (damaged)
	read map[string]bool  // files read
}

// metaFileName is the name of the batch's nth file, bid its staging partial (unique to the batch).
func metaFileName(bid string, n int64) string { return fmt.Sprintf("%s.%d", bid, n) }

// metaFileBatch is the staging partial's id in a file name of the folder, or "".
func metaFileBatch(name string) string {
	bid, _, ok := strings.Cut(name, ".")
	if !ok || store.ValidID(bid) != nil {
		return ""
	}
	return bid
}

// encodeMeta is m as one line: a line of a file of the folder (one Info a line), and the whole
// of an upload's .upload.json.
func encodeMeta(m *Meta) []byte {
	line, _ := json.Marshal(m)
	return append(line, '\n')
}

// decodeMeta reads a file of the folder; any line that is not the metadata of an upload of this
// store (an upload id, and what store.Recognize asks of every upload's) makes the whole file
// damaged (an error), so that no upload is named by half a file.
func decodeMeta(b []byte) ([]*Meta, error) {
	var ms []*Meta
	for len(b) > 0 {
		line, rest, _ := bytes.Cut(b, []byte{'\n'})
		b = rest
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var m Meta
		err := json.Unmarshal(line, &m)
		if err = cmp.Or(err, store.ValidID(m.ID), store.Recognize(m.ID, m.ID, false, &m)); err != nil {
			return nil, err
		}
		ms = append(ms, &m)
	}
	return ms, nil
}

// indexed returns the metadata the folder holds for upload id; ok false when no file names it.
func (s *localStore) indexed(id string) (m *Meta, ok bool) {
	x := &s.meta
	x.mu.Lock()
	defer x.mu.Unlock()
	if m, ok = x.byID[id]; ok {
		return m, true
	}
	s.readIndex()
	m, ok = x.byID[id]
	return m, ok
}

// readIndex reads the files of the folder not read yet; s.meta.mu is held. A file that is not
// the store's own (a link, another owner, a second hard link, group or other access, damaged) is
// not read: the uploads it names are damaged.
func (s *localStore) readIndex() {
	x := &s.meta
	if x.byID == nil {
		x.byID, x.read = map[string]*Meta{}, map[string]bool{}
	}
	fd, ents, err := s.listIfThere(InternalDir, metaDir)
	if err != nil || fd < 0 {
		return
	}
	defer unix.Close(fd)
	for _, e := range ents {
		name := e.Name()
		if x.read[name] || metaFileBatch(name) == "" {
			continue
		}
		ms, err := readMetaFile(fd, name, s.internal(metaDir, name))
		if err != nil {
			continue // looked at again on the next miss
		}
		x.read[name] = true
		for _, m := range ms {
			if _, twice := x.byID[m.ID]; twice {
				x.byID[m.ID] = nil
				continue
			}
			x.byID[m.ID] = m
		}
	}
}

// readMetaFile reads the file name of the folder dirfd through the guarded open of finished
// files (no link followed, a regular file of the user's, 0400, one link).
func readMetaFile(dirfd int, name, path string) ([]*Meta, error) {
	b, err := readGuarded(dirfd, name, path, name, 64<<20)
	if err != nil {
		return nil, err
	}
	return decodeMeta(b)
}

// stagedIndex is the metadata file of the uploads a batch holds, not yet taken by a commit,
// written in the staging partial as they are built: an upload's line is written before it counts
// as built (Batch.add), so that the room its metadata takes is taken while its own bytes are,
// and the commit that publishes it writes no new byte. Were the file written by the commit, the
// builds of the next batch (or any other writer) could fill the disk meanwhile, and uploads
// whose bytes were all written would fail for want of their metadata's room. The line of an
// upload that fails after it was written stays: it names an id no folder of the store will have
// (a failed staged upload goes with the staging partial), which no reader looks up.
type stagedIndex struct {
	st   *partial
	name string // metaFileName
	fd   int    // open for writing until sealed
	size int64  // the bytes of the whole lines written
}

// newStagedIndex makes the file name in the staging partial st, empty.
func newStagedIndex(st *partial, name string) (*stagedIndex, error) {
	fd, err := createFd(int(st.dirf.Fd()), name, unix.O_WRONLY, ReadOnlyMode, nil)
	if err != nil {
		return nil, storeErr(st.dir+"/"+name, err)
	}
	return &stagedIndex{st: st, name: name, fd: fd}, nil
}

func (x *stagedIndex) path() string { return x.st.dir + "/" + x.name }

// add writes m's line. On failure (a full disk) the file is cut back to the lines it held, so
// that it never holds part of a line, and m is not in it.
func (x *stagedIndex) add(m *Meta) error {
	line := encodeMeta(m)
	if err := pwriteAll(x.fd, line, x.size); err != nil {
		unix.Ftruncate(x.fd, x.size)
		return storeErr(x.path(), err)
	}
	x.size += int64(len(line))
	return nil
}

// seal closes the file, which is complete; nothing is fsynced here where the commit's syncfs
// makes it durable with the uploads. On failure it is removed.
func (x *stagedIndex) seal() (err error) {
	if fileSyncEach {
		err = wrap(x.path(), unix.Fsync(x.fd))
	}
	if cerr := unix.Close(x.fd); err == nil && cerr != nil {
		err = storeErr(x.path(), cerr)
	}
	x.fd = -1
	if err != nil {
		unix.Unlinkat(int(x.st.dirf.Fd()), x.name, 0)
	}
	return err
}

// pwriteAll writes b to fd at off. The error is the system's.
func pwriteAll(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		n, err := unix.Pwrite(fd, b, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}

// publishIndex renames the file name from the staging partial st into the folder (made with the
// staging partial: groupBatch.staging) and fsyncs the folder: from here the metadata is durable in
// its place, and the uploads it names may be placed.
func (s *localStore) publishIndex(st *partial, name string) error {
	fd, err := s.openDir(lockErr, true, InternalDir, metaDir)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := renameNoReplaceAt(int(st.dirf.Fd()), name, fd, name); err != nil {
		unix.Unlinkat(int(st.dirf.Fd()), name, 0)
		return storeErr(s.internal(metaDir, name), err)
	}
	if err := dirDurable(fd); err != nil {
		return storeErr(s.internal(metaDir), err)
	}
	return nil
}

// pruneIndex removes each file of the folder that names no upload in the store any more and
// whose batch has ended (its staging partial is gone: a batch places its uploads while its
// partial is there), judged from listings of the sweep's folders taken after the folder's own, in
// the order a batch makes things (its partial, then its file, then its uploads), so that a batch
// running meanwhile keeps its file. The sweep calls it under its lock, after removing uploads; a
// file it cannot read is kept, and every file when a folder cannot be listed (the next sweep
// prunes them).
func (d *storeDirs) pruneIndex() {
	fd, ents, err := d.s.listIfThere(InternalDir, metaDir)
	if err != nil || fd < 0 {
		return
	}
	defer unix.Close(fd)
	if len(ents) == 0 {
		return // no store listing for a folder with nothing to prune
	}
	var in [2]map[string]bool // the partials, then the store
	for i, dirfd := range []int{d.partfd, d.storefd} {
		in[i] = map[string]bool{}
		names, err := readDirAt(dirfd, "")
		if err != nil { // or no partials folder when the sweep began: a batch may be making it
			return
		}
		for _, e := range names {
			in[i][e.Name()] = true
		}
	}
	for _, e := range ents {
		bid := metaFileBatch(e.Name())
		if bid == "" || in[0][bid] {
			continue
		}
		ms, err := readMetaFile(fd, e.Name(), d.s.internal(metaDir, e.Name()))
		if err == nil && !slices.ContainsFunc(ms, func(m *Meta) bool { return in[1][m.ID] }) {
			unix.Unlinkat(fd, e.Name(), 0)
		}
	}
}

// damagedMeta is the error of an upload folder with no .upload.json that two files of the
// folder name.
func (s *localStore) damagedMeta(id string) error {
	return fault.Errorf(fault.UploadUnreadable, "upload %s: %s: no %s, and two files of %s name it; the upload is damaged",
		id, s.UploadDir(id), MetaName, s.internal(metaDir))
}
