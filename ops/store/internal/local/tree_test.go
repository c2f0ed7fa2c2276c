//go:build unix

package local

import (
	"context"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/stage"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/zeebo/blake3"
)

// treeSource writes files (rel -> content) under a new folder and returns it as a TreeSource
// with the tree's BLAKE3.
func treeSource(t *testing.T, files map[string]string) store.TreeSource {
	t.Helper()
	root := filepath.Join(t.TempDir(), "proj")
	var sum manifest.TreeSum
	src := store.TreeSource{Path: root, Name: "proj", Open: stage.OpenTreeFile}
	for rel, data := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		h := blake3.Sum256([]byte(data))
		sum.Add(rel, hex.EncodeToString(h[:]))
		src.Files = append(src.Files, store.TreeFile{Rel: rel, Path: p, Size: int64(len(data))})
	}
	slices.SortFunc(src.Files, func(a, b store.TreeFile) int { return strings.Compare(a.Rel, b.Rel) })
	src.Blake3 = sum.Sum()
	return src
}

var treeFiles = map[string]string{
	"a/main.go":         "package a\n",
	"b/main.go":         "package b\n",
	"b-c/x":             "dash sorts before slash\n",
	"deep/er/still/f":   "deep\n",
	".upload.json":      "a user's file that happens to have the metadata's name\n",
	"empty":             "",
	"b/sub/.used":       "and the marker's\n",
	"spaces in/na me.t": "ok\n",
}

// TestUploadTree: the tree lands under STORE/<id>/<name>/ with the store's modes, its listing
// beside it, its BLAKE3 the manifest's; the partial is gone; every file reads back equal through
// the guarded open.
func TestUploadTree(t *testing.T) {
	s := testStore(t)
	src := treeSource(t, treeFiles)
	ti, err := treesOf(s).UploadTree(context.Background(), src, store.TreeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ti.Blake3 != src.Blake3 || len(ti.Files) != len(treeFiles) || ti.Name != "proj" {
		t.Fatalf("tree info %+v, want blake3 %s and %d files", ti.Info, src.Blake3, len(treeFiles))
	}
	if ids, _ := s.partialIDs(); len(ids) != 0 {
		t.Fatalf("partials left: %v", ids)
	}
	for rel, data := range treeFiles {
		p := filepath.Join(s.FinishedPath(ti.ID, "proj"), filepath.FromSlash(rel))
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if !store.FinishedMode(uint32(fi.Mode().Perm())) || !fi.Mode().IsRegular() {
			t.Errorf("%s: mode %v", rel, fi.Mode())
		}
		r, err := treesOf(s).OpenTreeFile(context.Background(), ti.ID, "proj", rel)
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		b := make([]byte, len(data)+1)
		n, _ := r.Read(b)
		r.Close()
		if string(b[:n]) != data {
			t.Errorf("%s: read %q, want %q", rel, b[:n], data)
		}
	}
	filepath.Walk(s.UploadDir(ti.ID), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.IsDir() && fi.Mode().Perm() != DirMode {
			t.Errorf("%s: folder mode %v", p, fi.Mode().Perm())
		}
		return nil
	})
	got, err := treesOf(s).TreeInfo(context.Background(), ti.ID)
	if err != nil || got.Blake3 != src.Blake3 || len(got.Files) != len(treeFiles) {
		t.Fatalf("TreeInfo: %+v, %v", got, err)
	}
	if files, ok, err := treesOf(s).FolderFiles(context.Background(), ti.ID); err != nil || !ok || files != len(treeFiles) {
		t.Fatalf("FolderFiles: %d %v %v", files, ok, err)
	}
	// The same tree again is the same upload.
	again, err := treesOf(s).UploadTree(context.Background(), src, store.TreeOptions{})
	if err != nil || again.ID != ti.ID {
		t.Fatalf("again: %v, %v; want the same id %s", again, err, ti.ID)
	}
	// Without the manifest's BLAKE3 too (sniff --no-hash): hashed first, named again.
	src.Blake3 = ""
	if again, err = treesOf(s).UploadTree(context.Background(), src, store.TreeOptions{}); err != nil || again.ID != ti.ID {
		t.Fatalf("again without blake3: %v, %v; want the same id %s", again, err, ti.ID)
	}
}

// TestUploadTreeRefuses: a wrong BLAKE3, an unsorted list, a path that is not plain, the
// listing's name, and a source file that changed since the walk.
func TestUploadTreeRefuses(t *testing.T) {
	s := testStore(t)
	for _, c := range []struct {
		name string
		edit func(*store.TreeSource)
		code fault.Code
	}{
		{"wrong blake3", func(src *store.TreeSource) { src.Blake3 = strings.Repeat("0", 64) }, fault.UploadHashMismatch},
		{"unsorted", func(src *store.TreeSource) { src.Files[0], src.Files[1] = src.Files[1], src.Files[0] }, fault.UploadInvalid},
		{"dot-dot", func(src *store.TreeSource) { src.Files[0].Rel = "../escape" }, fault.UploadInvalid},
		{"absolute", func(src *store.TreeSource) { src.Files[0].Rel = "/etc/passwd" }, fault.UploadInvalid},
		{"listing name", func(src *store.TreeSource) { src.Name = store.TreeListName }, fault.UploadInvalid},
		{"grown", func(src *store.TreeSource) { os.WriteFile(src.Files[0].Path, []byte("more than before"), 0o644) }, fault.UploadSourceChange},
		{"now a symlink", func(src *store.TreeSource) {
			os.Remove(src.Files[0].Path)
			os.Symlink("/etc/passwd", src.Files[0].Path)
		}, fault.UploadSourceChange},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := treeSource(t, map[string]string{"a": "1", "b": "2"})
			c.edit(&src)
			_, err := treesOf(s).UploadTree(context.Background(), src, store.TreeOptions{})
			wantCode(t, err, c.code)
			if ids, _ := s.IDs(); len(ids) != 0 {
				t.Fatalf("finished uploads after a refusal: %v", ids)
			}
		})
	}
}

// TestUploadTreeResume: a killed upload's partial (some files there, one cut short, one replaced
// by a symlink to a file outside, one a folder where a file goes) is resumed: what is whole and
// equal is kept (same inode), the rest written anew; nothing outside is touched.
func TestUploadTreeResume(t *testing.T) {
	s := testStore(t)
	src := treeSource(t, map[string]string{"a/1": "one\n", "a/2": "two\n", "b/3": "three\n", "c": "four\n", "d/4": "five\n"})
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	_, err := treesOf(s).UploadTree(ctx, src, store.TreeOptions{Progress: func(int64) {
		if n++; n == 3 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled after the third file: %v, want context.Canceled", err)
	}
	ids, _ := s.partialIDs()
	if len(ids) != 1 {
		t.Fatalf("partials %v, want one", ids)
	}
	tree := filepath.Join(s.partialDir(ids[0]), partialTree, "proj")
	before, err := os.Stat(filepath.Join(tree, "a", "1"))
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "outside")
	os.WriteFile(outside, []byte("keep me"), 0o600)
	os.Remove(filepath.Join(tree, "a", "2"))
	os.Symlink(outside, filepath.Join(tree, "a", "2"))
	os.WriteFile(filepath.Join(tree, "b", "3"), []byte("thr"), 0o600)
	os.MkdirAll(filepath.Join(tree, "c", "x"), 0o700)
	// A link where the source has a folder: removed, not followed (nothing lands outside).
	outsideDir := t.TempDir()
	os.Symlink(outsideDir, filepath.Join(tree, "d"))
	if ids, _ := s.IDs(); len(ids) != 0 {
		t.Fatalf("visible before the end: %v", ids)
	}
	ti, err := treesOf(s).UploadTree(context.Background(), src, store.TreeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ti.ID != ids[0] {
		t.Fatalf("resumed as %s, want the partial's id %s", ti.ID, ids[0])
	}
	after, err := os.Stat(filepath.Join(s.FinishedPath(ti.ID, "proj"), "a", "1"))
	if err != nil || !os.SameFile(before, after) {
		t.Fatalf("a/1 was written again (or is gone: %v)", err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep me" {
		t.Fatalf("the file outside was written through the link: %q", b)
	}
	if ents, _ := os.ReadDir(outsideDir); len(ents) != 0 {
		t.Fatalf("the folder outside was written through the link: %v", ents)
	}
	if _, err := treesOf(s).VerifyTree(context.Background(), ti.ID, nil); err != nil {
		t.Fatalf("verify after resume: %v", err)
	}
}

// TestVerifyTree names each file that changed, went missing or was added, and refuses a symlink
// inside the finished upload without following it.
func TestVerifyTree(t *testing.T) {
	s := testStore(t)
	src := treeSource(t, map[string]string{"a/1": "one\n", "a/2": "two\n", "b/3": "three\n"})
	ti, err := treesOf(s).UploadTree(context.Background(), src, store.TreeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := s.FinishedPath(ti.ID, "proj")
	os.Chmod(filepath.Join(dir, "a", "2"), 0o600)
	os.WriteFile(filepath.Join(dir, "a", "2"), []byte("TWO\n"), 0o600)
	os.Remove(filepath.Join(dir, "b", "3"))
	os.WriteFile(filepath.Join(dir, "b", "new"), []byte("x"), 0o600)
	os.Symlink("/etc/passwd", filepath.Join(dir, "b", "3"))
	_, err = treesOf(s).VerifyTree(context.Background(), ti.ID, nil)
	wantCode(t, err, fault.VerifyMismatch)
	msg := err.Error()
	for _, want := range []string{"a/2 changed", "b/3", "b/new was added"} {
		if !strings.Contains(msg, want) {
			t.Errorf("verify says %q; want it to name %q", msg, want)
		}
	}
	if strings.Contains(msg, "a/1") {
		t.Errorf("verify names a/1, which did not change: %q", msg)
	}
	_, err = treesOf(s).OpenTreeFile(context.Background(), ti.ID, "proj", "b/3")
	wantCode(t, err, fault.UploadUnreadable)
}

// TestSweepFolderBindMount: a sweep removes a stale folder upload whole, and never enters a
// bind mount inside another one: that upload fails (upload.unreadable, "another file system")
// and the mounted files stay. Root only: mount --bind needs it.
func TestSweepFolderBindMount(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("mount --bind needs root, and CI runs as root")
		}
		t.Skip("mount --bind needs root")
	}
	s := newStore(t)
	whole, err := treesOf(s).UploadTree(context.Background(), treeSource(t, map[string]string{"a/1": "1", "b/2": "2"}), store.TreeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	src := treeSource(t, map[string]string{"x/1": "3", "y/2": "4"})
	src.Name = "mounted"
	mounted, err := treesOf(s).UploadTree(context.Background(), src, store.TreeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	outside := outsideDir(t)
	mnt := filepath.Join(s.FinishedPath(mounted.ID, "mounted"), "x", "mnt")
	os.Mkdir(mnt, 0o700)
	if out, err := exec.Command("mount", "--bind", outside, mnt).CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mount --bind: %v: %s", err, out)
		}
		t.Skipf("mount --bind: %v: %s", err, out)
	}
	defer func() {
		exec.Command("umount", mnt).Run()
		exec.Command("umount", filepath.Join(s.Dir, InternalDir, trashDir, mounted.ID, "mounted", "x", "mnt")).Run()
	}()
	before := snapshot(t, outside)
	got, failure := sweepEverything(t, s)
	if got[whole.ID] != store.Removed || got[mounted.ID] != store.Failed {
		t.Fatalf("outcomes %v: want %s removed and %s failed", got, whole.ID, mounted.ID)
	}
	if _, err := os.Lstat(s.UploadDir(whole.ID)); !os.IsNotExist(err) {
		t.Fatalf("the swept folder upload is still there: %v", err)
	}
	wantCode(t, failure, fault.UploadUnreadable)
	if !strings.Contains(failure.Error(), "another file system") {
		t.Fatalf("failure %v does not say why", failure)
	}
	sameSnapshot(t, "bind mount", before, snapshot(t, outside))
}

// TestVerifyTreeTop: the guard on a folder upload's own folder (checkTop, as a file upload's):
// verify refuses it (upload.unreadable, naming what is wrong) for each of these, and an intact
// one, used, passes. Check (store.Checker) is not asked: verify asks it of file uploads only, and
// a folder upload's own folder is checked as ReadTreeDir reads it.
func TestVerifyTreeTop(t *testing.T) {
	outside := t.TempDir()
	tests := []struct {
		name, says string
		prep       func(s *localStore, ti *store.TreeInfo)
	}{
		{"intact and used", "", func(s *localStore, ti *store.TreeInfo) { s.MarkUsed(context.Background(), []string{ti.ID}, time.Now()) }},
		{"upload folder mode 0755", "folder mode 0755", func(s *localStore, ti *store.TreeInfo) { os.Chmod(s.UploadDir(ti.ID), 0o755) }},
		{"the folder mode 0755", "folder mode 0755, not 0700", func(s *localStore, ti *store.TreeInfo) { os.Chmod(s.FinishedPath(ti.ID, ti.Name), 0o755) }},
		{"the folder a symlink", "not a real folder", func(s *localStore, ti *store.TreeInfo) {
			os.Rename(s.FinishedPath(ti.ID, ti.Name), filepath.Join(outside, "moved"))
			os.Symlink(filepath.Join(outside, "moved"), s.FinishedPath(ti.ID, ti.Name))
		}},
		{"listing mode 0644", "mode 0644", func(s *localStore, ti *store.TreeInfo) {
			os.Chmod(filepath.Join(s.UploadDir(ti.ID), store.TreeListName), 0o644)
		}},
		{"listing hard-linked", "2 hard links", func(s *localStore, ti *store.TreeInfo) {
			os.Link(filepath.Join(s.UploadDir(ti.ID), store.TreeListName), filepath.Join(outside, "link"))
		}},
		{"marker a symlink", "a symlink", func(s *localStore, ti *store.TreeInfo) {
			os.Symlink(outside, filepath.Join(s.UploadDir(ti.ID), UsedName))
		}},
		{"marker mode 0400", "mode 0400, not 0600", func(s *localStore, ti *store.TreeInfo) {
			os.WriteFile(filepath.Join(s.UploadDir(ti.ID), UsedName), nil, 0o400)
		}},
		{"extra entry", `unexpected entry "x"`, func(s *localStore, ti *store.TreeInfo) {
			os.WriteFile(filepath.Join(s.UploadDir(ti.ID), "x"), nil, FileMode)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testStore(t)
			ti, err := treesOf(s).UploadTree(context.Background(), treeSource(t, map[string]string{"a/1": "one\n"}), store.TreeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tt.prep(s, ti)
			_, err = treesOf(s).VerifyTree(context.Background(), ti.ID, nil)
			if tt.says == "" {
				if err != nil {
					t.Errorf("verify: %v", err)
				}
				return
			}
			wantCode(t, err, fault.UploadUnreadable)
			if err != nil && !strings.Contains(err.Error(), tt.says) {
				t.Errorf("verify says %q; want %q", err, tt.says)
			}
		})
	}
}

// treesOf is the folder uploads of s as a store.Trees (the engine's rules over it).
func treesOf(s *localStore) store.Trees {
	return store.TreesOn(func(context.Context, bool) (store.TreeBackend, error) { return s, nil })
}

// TestPublishTreeFailedKeepsFiles: a publish that fails at its last step (STORE/<id> taken, so
// the rename into place is refused) puts the tree back where the partial keeps it, so that the
// files written are kept for the next run, which resumes the upload under its id.
func TestPublishTreeFailedKeepsFiles(t *testing.T) {
	ctx := context.Background()
	s := testStore(t)
	src := treeSource(t, map[string]string{"a/1": "one\n", "b": "two\n"})
	_, w, err := s.StartTree(ctx, store.TreeStart{Src: &src, Size: 8})
	if err != nil {
		t.Fatal(err)
	}
	id := w.ID()
	var sum manifest.TreeSum
	sizes := make([]int64, len(src.Files))
	for i, f := range src.Files {
		b3, err := store.PutTreeFile(ctx, w, &src, f)
		if err != nil {
			t.Fatal(err)
		}
		sum.Add(f.Rel, b3)
		sizes[i] = f.Size
	}
	if err := os.MkdirAll(filepath.Join(s.UploadDir(id), "taken"), 0o700); err != nil {
		t.Fatal(err)
	}
	m := &store.TreeMeta{Info: store.Info{ID: id, Name: src.Name, Size: 8, Blake3: sum.Sum(), Made: time.Now().UTC()},
		Kind: store.KindFolder, Files: len(src.Files), Sizes: sizes}
	err = w.Publish(ctx, m, src.Files, store.TreeListing(&sum))
	w.Close(err)
	if err == nil {
		t.Fatal("published over a folder already at STORE/<id>")
	}
	for _, rel := range []string{"a/1", "b"} {
		if _, err := os.Lstat(filepath.Join(s.partialDir(id), partialTree, src.Name, rel)); err != nil {
			t.Errorf("%s is not back in the partial: %v", rel, err)
		}
	}
	os.RemoveAll(s.UploadDir(id))
	ti, err := treesOf(s).UploadTree(ctx, src, store.TreeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ti.ID != id {
		t.Fatalf("the next run made %s, want the partial's %s resumed", ti.ID, id)
	}
}

// TestTreeSyncDirs: where files are fsynced one by one (not Linux), Publish fsyncs every folder
// of the tree once, the top and each folder on a file's path (SyncDirs); here it is called
// directly. A folder of the list that is not there fails it: each is opened, none skipped.
func TestTreeSyncDirs(t *testing.T) {
	ctx := context.Background()
	s := testStore(t)
	src := treeSource(t, map[string]string{"a/b/1": "one\n", "a/2": "two\n", "c": "three\n"})
	_, w, err := s.StartTree(ctx, store.TreeStart{Src: &src, Size: 14})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(nil)
	for _, f := range src.Files {
		if _, err := store.PutTreeFile(ctx, w, &src, f); err != nil {
			t.Fatal(err)
		}
	}
	tw := w.(*store.PartialTreeWrite)
	if err := tw.SyncDirs(src.Files); err != nil {
		t.Fatal(err)
	}
	tw.CloseDir()
	if err := os.RemoveAll(filepath.Join(s.partialDir(w.ID()), partialTree, src.Name, "a", "b")); err != nil {
		t.Fatal(err)
	}
	if err := tw.SyncDirs(src.Files); err == nil {
		t.Fatal("SyncDirs passed over a folder of the tree that is gone")
	}
}

// TestTreeMetaOverOneMiB: a folder upload's metadata longer than a MiB (each file's size is in
// it: a folder of a few hundred thousand files) is read whole by ls as by its info, up to the
// limit every store reads a listing or metadata to (store.TreeObjectMax).
func TestTreeMetaOverOneMiB(t *testing.T) {
	ctx := context.Background()
	s := testStore(t)
	ti, err := treesOf(s).UploadTree(ctx, treeSource(t, treeFiles), store.TreeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	meta := filepath.Join(s.UploadDir(ti.ID), MetaName)
	b, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	// The same metadata made as long as that of so many files: JSON, padded with spaces.
	b = append([]byte(strings.Repeat(" ", 1<<20)), b...)
	if err := os.Chmod(meta, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(meta, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(meta, ReadOnlyMode); err != nil {
		t.Fatal(err)
	}
	if _, err := treesOf(s).TreeInfo(ctx, ti.ID); err != nil {
		t.Fatalf("tree info: %v", err)
	}
	l, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Entries) != 1 || !l.Entries[0].Folder || l.Entries[0].Files != len(treeFiles) || len(l.Skipped) != 0 {
		t.Fatalf("list: %+v, skipped %+v; want the folder upload of %d files", l.Entries, l.Skipped, len(treeFiles))
	}
}
