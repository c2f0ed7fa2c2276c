package mem

import (
	"bytes"
	"context"
	"io"
	"sort"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// UploadTree uploads the folder src as one upload (store.Trees): its BLAKE3 known first, the
// source's note naming the upload, a finished upload of it named again only while intact
// (store.TreeIntact), an unfinished one no writer holds resumed with the files it holds that
// still equal the source's.
func (s *Store) UploadTree(ctx context.Context, src store.TreeSource, opts store.TreeOptions) (*store.TreeInfo, error) {
	if err := store.ValidTreeName(src.Name); err != nil {
		return nil, err
	}
	total, err := store.CheckTreeSource(&src)
	if err != nil {
		return nil, err
	}
	want, err := store.CheckHex(src.Blake3)
	if err != nil {
		return nil, err
	}
	if want == "" {
		if want, err = store.HashTree(ctx, &src); err != nil {
			return nil, err
		}
	}
	progress := opts.Progress
	if progress == nil {
		progress = func(int64) {}
	}
	note := noteKey("folder", src.Path, src.Name, want)

	id, fin, p, err := s.byNote(note, true)
	if err != nil {
		return nil, err
	}
	if fin != nil && fin.info.Name == src.Name && store.TreeIntact(ctx, s, id, want) {
		s.unhold(p)
		progress(total)
		return s.TreeInfo(ctx, id)
	}
	if p == nil {
		var release func()
		if id, p, release, err = s.beginStaged(ctx, note, src.Name, total, true); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil && fault.CodeOf(err) != "" {
				release()
			}
		}()
	}
	defer s.unhold(p)

	var sum manifest.TreeSum
	listing := make([]store.TreeFile, len(src.Files))
	for i, f := range src.Files {
		if err = ctx.Err(); err != nil {
			return nil, err
		}
		var data []byte
		if data, err = readSource(&src, f); err != nil {
			return nil, err
		}
		h := hexSum(data)
		sum.Add(f.Rel, h)
		listing[i] = store.TreeFile{Rel: f.Rel, Size: f.Size, Blake3: h}
		s.mu.Lock()
		if have, ok := p.files[f.Rel]; !ok || !bytes.Equal(have, data) {
			p.files[f.Rel] = data
			p.written = s.now()
		}
		s.mu.Unlock()
		progress(f.Size)
	}
	got := sum.Sum()
	s.mu.Lock()
	defer s.mu.Unlock()
	if got != want {
		s.drop(id, p)
		err = fault.Errorf(fault.UploadHashMismatch, "%s: the folder's BLAKE3 is %s, the manifest says %s (changed since it was sniffed)", src.Path, got, want)
		return nil, err
	}
	files := map[string][]byte{}
	for _, f := range listing {
		files[f.Rel] = p.files[f.Rel]
	}
	fu := &finished{info: store.Info{ID: id, Name: src.Name, Size: total, Blake3: got, Made: s.now()}, tree: listing, files: files}
	s.finished[id] = fu
	delete(s.partials, id)
	delete(s.reserved, id)
	return fu.treeInfo(), nil
}

// readSource reads the source file f of a folder whole, checked as the stage opened it.
func readSource(src *store.TreeSource, f store.TreeFile) ([]byte, error) {
	sf, err := src.OpenFile(f)
	if err != nil {
		return nil, err
	}
	defer sf.Close()
	data, err := io.ReadAll(io.NewSectionReader(sf, 0, f.Size+1))
	if err != nil {
		return nil, fault.Errorf(fault.FileUnreadable, "%s: %v", f.Path, err)
	}
	if int64(len(data)) != f.Size {
		return nil, fault.Errorf(fault.UploadSourceChange, "%s: changed since the folder was walked", f.Path)
	}
	if err := sf.Unchanged(); err != nil {
		return nil, err
	}
	return data, nil
}

func (f *finished) treeInfo() *store.TreeInfo {
	return &store.TreeInfo{Info: f.info, Files: append([]store.TreeFile(nil), f.tree...)}
}

// TreeInfo reads a finished folder upload's metadata and listing.
func (s *Store) TreeInfo(ctx context.Context, id string) (*store.TreeInfo, error) {
	if err := store.ValidID(id); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkStore(false); err != nil {
		return nil, err
	}
	f := s.finished[id]
	switch {
	case f == nil:
		return nil, s.missing(id)
	case !f.folder():
		return nil, fault.Errorf(fault.UploadInvalid, "upload %s: a file, not a folder", id)
	}
	return f.treeInfo(), nil
}

// FolderFiles reports whether the finished upload id is a folder upload, and its files.
func (s *Store) FolderFiles(ctx context.Context, id string) (int, bool, error) {
	if err := store.ValidID(id); err != nil {
		return 0, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkStore(false); err != nil {
		return 0, false, err
	}
	f := s.finished[id]
	if f == nil {
		return 0, false, s.missing(id)
	}
	return len(f.tree), f.folder(), nil
}

// OpenTreeFile opens the file rel of the finished folder upload id named name.
func (s *Store) OpenTreeFile(ctx context.Context, id, name, rel string) (store.Reader, error) {
	if err := store.ValidID(id); err != nil {
		return nil, err
	}
	if err := store.ValidTreeName(name); err != nil {
		return nil, err
	}
	if err := store.CheckRel(rel); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.finishedOf(id, name)
	if err != nil {
		return nil, err
	}
	data, ok := f.files[rel]
	if !f.folder() || !ok {
		return nil, s.missing(id)
	}
	info := store.Info{ID: id, Name: name, Size: int64(len(data)), Blake3: hexSum(data), Made: f.info.Made}
	for _, tf := range f.tree {
		if tf.Rel == rel {
			info.Size, info.Blake3 = tf.Size, tf.Blake3
		}
	}
	return &reader{Reader: bytes.NewReader(data), info: &info}, nil
}

// VerifyTree reads every file of the finished folder upload id and checks it against the
// listing, and the listing against the upload's BLAKE3 (store.CheckTree).
func (s *Store) VerifyTree(ctx context.Context, id string, progress func(int64)) (*store.TreeInfo, error) {
	ti, err := s.TreeInfo(ctx, id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	files := map[string][]byte{}
	for rel, d := range s.finished[id].files {
		files[rel] = d
	}
	s.mu.Unlock()
	var sum manifest.TreeSum
	listed := map[string]bool{}
	for _, f := range ti.Files {
		sum.Add(f.Rel, f.Blake3)
		listed[f.Rel] = true
	}
	if got := sum.Sum(); got != ti.Blake3 {
		return ti, fault.Errorf(fault.VerifyMismatch, "upload %s: its listing hashes to %s, its metadata says %s (the listing changed)", id, got, ti.Blake3)
	}
	c := store.TreeCheck{Jobs: 1,
		Open: func(ctx context.Context, rel string) (io.ReadCloser, error) {
			d, ok := files[rel]
			if !ok {
				return nil, s.missing(id)
			}
			return io.NopCloser(bytes.NewReader(d)), nil
		},
		ReadErr: func(rel string, n int64, err error) error {
			return fault.Errorf(fault.UploadUnreadable, "upload %s: %s: %v", id, manifest.Quote(rel), err)
		}}
	var extra []string
	for rel := range files {
		if !listed[rel] {
			extra = append(extra, rel)
		}
	}
	sort.Strings(extra)
	for _, rel := range extra {
		c.Extra = append(c.Extra, manifest.Quote(rel)+" was added")
	}
	return ti, store.CheckTree(ctx, ti, c, progress)
}
