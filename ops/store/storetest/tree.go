package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/stage"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/sniff"
)

// Folder uploads (store.Trees), for a backend that keeps them: the tree laid out and shown
// finished at once, an interrupted upload invisible and then resumed under the same id, verify
// naming each file that changed, went missing or was added, sweep removing a folder upload whole
// and nothing beside it, the guarded open of a file inside, and FolderFiles. The uploads go
// through the upload stage (ops/stage), which opens the source files for the backend.
var treeTests = []struct {
	name string
	f    func(t *testing.T, h Harness)
}{
	{"TreeUpload", testTreeUpload},
	{"TreeInterruptedThenResumed", testTreeResume},
	{"TreeUnfinishedLastWrittenByItsFiles", testTreeUnfinishedWritten},
	{"TreeResumedAfterFilesRemoved", testTreeResumeShrunk},
	{"TreeVerifyNamesFiles", testTreeVerify},
	{"TreeSweepWhole", testTreeSweep},
	{"TreeOpenGuarded", testTreeOpenGuarded},
	{"TreeNameAgainMarksUsed", testTreeNameAgainMarksUsed},
	{"TreeFolderRemovedIsEveryFileMissing", testTreeFolderRemoved},
	{"TreeWithoutMetadataIsNoUpload", testTreeWithoutMeta},
	{"TreeListingOverOneMiB", testTreeLargeListing},
}

// treeFiles is a folder with nested folders, the same base name in two places, names that sort
// around "/", an empty file, the store's reserved names inside, and one file larger than a
// small read (so that a backend's path for larger files is taken too), and names a URL (an S3
// key) escapes.
func treeFiles() map[string][]byte {
	big := make([]byte, 1<<20+12345)
	rand.NewChaCha8([32]byte{19}).Read(big)
	return map[string][]byte{
		"a/main.go":           []byte("package a\n"),
		"b/main.go":           []byte("package b\n"),
		"b-c/x":               []byte("dash sorts before slash\n"),
		"deep/er/still/f":     []byte("deep\n"),
		".upload.json":        []byte("a user's file with the metadata's name\n"),
		"b/sub/.used":         []byte("and the marker's\n"),
		"empty":               nil,
		"spaces in/na me.txt": []byte("spaces\n"),
		"café/ü+%41 #.txt":    []byte("characters a URL escapes\n"),
		"big.bin":             big,
	}
}

// writeTree writes files under a new folder named name and returns its path.
func writeTree(t *testing.T, name string, files map[string][]byte) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), name)
	must(t, "mkdir", os.MkdirAll(root, 0o700))
	for rel, data := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		must(t, "mkdir", os.MkdirAll(filepath.Dir(p), 0o700))
		must(t, "write", os.WriteFile(p, data, 0o600))
	}
	return root
}

// folderRecord is the record sniff makes of the folder at root (its tree BLAKE3 included).
func folderRecord(t *testing.T, root string) *manifest.Record {
	t.Helper()
	rec := &manifest.Record{Path: root}
	must(t, "sniff folder", sniff.FillFolder(rec, sniff.Options{}, sniff.WalkOptions{}))
	return rec
}

// trees is b's store.Trees, or the test is skipped (a backend that keeps no folder uploads
// refuses folder records: the stage's own test).
func trees(t *testing.T, b store.Backend) store.Trees {
	t.Helper()
	tr := b.Features().Trees
	if tr == nil {
		t.Skip("the backend keeps no folder uploads")
	}
	return tr
}

// uploadTree uploads the folder at root through the stage and returns its record.
func uploadTree(t *testing.T, ctx context.Context, b store.Backend, root string, progress func(int64)) (*manifest.Record, error) {
	t.Helper()
	rec := folderRecord(t, root)
	err := uploader(t, b, stage.Options{Progress: progress}).Upload(ctx, rec, nil)
	return rec, err
}

func readTreeFile(t *testing.T, tr store.Trees, id, name, rel string) []byte {
	t.Helper()
	r, err := tr.OpenTreeFile(ctx, id, name, rel)
	must(t, "open "+rel, err)
	defer r.Close()
	b, err := io.ReadAll(r)
	must(t, "read "+rel, err)
	return b
}

func sortedRels(files map[string][]byte) []string {
	var rels []string
	for rel := range files {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	return rels
}

func testTreeUpload(t *testing.T, h Harness) {
	b := h.New(t)
	tr := trees(t, b)
	files := treeFiles()
	root := writeTree(t, "proj", files)
	rec, err := uploadTree(t, ctx, b, root, nil)
	must(t, "upload folder", err)
	if rec.Upload == nil || rec.Kind != manifest.KindFolder || rec.Files != len(files) {
		t.Fatalf("record after upload: %+v", rec)
	}
	id := rec.Upload.ID
	var total int64
	for _, d := range files {
		total += int64(len(d))
	}
	ti, err := tr.TreeInfo(ctx, id)
	must(t, "tree info", err)
	if ti.Name != "proj" || ti.Size != total || ti.Blake3 != rec.Blake3 || len(ti.Files) != len(files) {
		t.Fatalf("tree info %+v (%d files), want proj, %d bytes, %s, %d files", ti.Info, len(ti.Files), total, rec.Blake3, len(files))
	}
	for i, rel := range sortedRels(files) {
		f := ti.Files[i]
		if f.Rel != rel || f.Size != int64(len(files[rel])) || f.Blake3 != sum(files[rel]) {
			t.Errorf("listing entry %d: %+v, want %s of %d bytes, %s", i, f, rel, len(files[rel]), sum(files[rel]))
		}
		if got := readTreeFile(t, tr, id, "proj", rel); !bytes.Equal(got, files[rel]) {
			t.Errorf("%s reads back %d bytes, not its %d", rel, len(got), len(files[rel]))
		}
	}
	info, err := b.Info(ctx, id)
	must(t, "info", err)
	if info.Name != "proj" || info.Size != total || info.Blake3 != rec.Blake3 {
		t.Fatalf("info %+v", info)
	}
	_, err = b.Open(ctx, id, "proj")
	if want := store.FolderAsFile(id, "proj"); err == nil || err.Error() != want.Error() {
		t.Fatalf("open a folder upload as one file: %v, want %v", err, want)
	}
	l, err := b.List(ctx)
	must(t, "list", err)
	// The listing says it is a folder upload and of how many files: ls shows them from it alone.
	if len(l.Entries) != 1 || !l.Entries[0].Finished || l.Entries[0].Name != "proj" || l.Entries[0].Size != total || len(l.Skipped) != 0 ||
		l.Entries[0].Blake3 != rec.Blake3 || !l.Entries[0].Folder || l.Entries[0].Files != len(files) {
		t.Fatalf("list: %+v, skipped %+v; want one finished folder upload proj of %d bytes, %s, %d files", l.Entries, l.Skipped, total, rec.Blake3, len(files))
	}
	n, folder, err := tr.FolderFiles(ctx, id)
	if err != nil || !folder || n != len(files) {
		t.Fatalf("FolderFiles: %d, %v, %v; want %d files of a folder", n, folder, err, len(files))
	}
	one := upload(t, b, "notes.txt", []byte("one file"))
	if n, folder, err := tr.FolderFiles(ctx, one.ID); err != nil || folder || n != 0 {
		t.Fatalf("FolderFiles of a file upload: %d, %v, %v", n, folder, err)
	}
	l, err = b.List(ctx)
	must(t, "list", err)
	for _, e := range l.Entries {
		if e.ID == one.ID && (e.Folder || e.Files != 0 || e.Blake3 != one.Blake3) {
			t.Fatalf("list shows the file upload %+v, want %s and no folder upload", e, one.Blake3)
		}
	}
	_, err = tr.TreeInfo(ctx, one.ID)
	wantCode(t, "tree info of a file upload", err, fault.UploadInvalid)
	missing, _ := store.NewID()
	_, _, err = tr.FolderFiles(ctx, missing)
	wantCode(t, "FolderFiles of no upload", err, fault.UploadMissing)
	must(t, "verify", verifyTreeOK(tr, id))
	must(t, "mark used", b.MarkUsed(ctx, []string{id}, time.Now()))
	// The same folder again is the same upload.
	again, err := uploadTree(t, ctx, b, root, nil)
	must(t, "upload again", err)
	if again.Upload.ID != id {
		t.Fatalf("the same folder again is upload %s, not %s", again.Upload.ID, id)
	}
}

func verifyTreeOK(tr store.Trees, id string) error {
	_, err := tr.VerifyTree(ctx, id, nil)
	return err
}

// letterFiles is a folder of n files, a/f.txt, b/f.txt, ..., each of its own bytes.
func letterFiles(n int) map[string][]byte {
	files := map[string][]byte{}
	for i := 0; i < n; i++ {
		files[string(rune('a'+i))+"/f.txt"] = []byte(strings.Repeat(string(rune('A'+i)), 100+i))
	}
	return files
}

// interruptTree uploads the folder at root, cancelled once after files were written, and
// returns the error the upload ended with.
func interruptTree(t *testing.T, b store.Backend, root string, after int) error {
	t.Helper()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	seen := 0
	_, err := uploadTree(t, cctx, b, root, func(int64) {
		if seen++; seen == after {
			cancel()
		}
	})
	settle(t, b)
	return err
}

// settle waits until what b lists stops changing. A cancelled request returns at once on the
// client, while an object store may still be taking the body it had received: that object lands
// after the run returned, and a test that looks at once would count it as never sent. The
// program has the same race and resumes by what the server holds when it runs again; the tests
// look once the server has caught up. A folder store settles at once.
func settle(t *testing.T, b store.Backend) {
	t.Helper()
	var last string
	for i := 0; i < 100; i++ {
		l, err := b.List(ctx)
		must(t, "list", err)
		now := fmt.Sprintf("%+v", l.Entries)
		if now == last {
			return
		}
		last = now
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the store's listing still changes 5 s after the upload was cancelled")
}

func testTreeResume(t *testing.T, h Harness) {
	b := h.New(t)
	tr := trees(t, b)
	files := letterFiles(12)
	root := writeTree(t, "logs", files)
	err := interruptTree(t, b, root, 3)
	if err == nil {
		t.Fatal("an upload cancelled after its third file finished")
	}
	if !errors.Is(err, context.Canceled) && fault.CodeOf(err) != fault.UploadMissing {
		t.Fatalf("interrupted upload: %v", err)
	}
	// Nothing of it is finished: no finished entry, and every reader says missing.
	l, err := b.List(ctx)
	must(t, "list", err)
	if len(l.Entries) != 1 || l.Entries[0].Finished {
		t.Fatalf("after the interruption: %+v; want one unfinished upload", l.Entries)
	}
	id := l.Entries[0].ID
	_, err = tr.TreeInfo(ctx, id)
	wantCode(t, "tree info of an unfinished folder upload", err, fault.UploadMissing)
	_, err = b.Info(ctx, id)
	wantCode(t, "info of an unfinished folder upload", err, fault.UploadMissing)
	_, err = tr.OpenTreeFile(ctx, id, "logs", "a/f.txt")
	wantCode(t, "a file of an unfinished folder upload", err, fault.UploadMissing)
	if _, folder, _ := tr.FolderFiles(ctx, id); folder {
		t.Fatal("FolderFiles says an unfinished upload is a folder upload")
	}
	err = b.MarkUsed(ctx, []string{id}, time.Now())
	wantCode(t, "mark an unfinished folder upload used", err, fault.UploadMissing)
	// It is the folder's to resume: the step-by-step upload takes no chunk of it and does not
	// finish it, saying why.
	_, err = b.Write(ctx, id, 0, strings.NewReader("x"))
	wantCode(t, "a chunk of an unfinished folder upload", err, fault.UploadInvalid)
	if err != nil && !strings.Contains(err.Error(), "unfinished folder upload") {
		t.Errorf("the refusal of a chunk does not say why: %v", err)
	}
	_, err = b.Finish(ctx, id, -1, "")
	wantCode(t, "a finish of an unfinished folder upload", err, fault.UploadInvalid)
	// Run again: the same upload, finished, every file equal.
	rec, err := uploadTree(t, ctx, b, root, nil)
	must(t, "resume", err)
	if rec.Upload.ID != id {
		t.Fatalf("resumed as %s, want the unfinished upload's id %s", rec.Upload.ID, id)
	}
	for rel, data := range files {
		if got := readTreeFile(t, tr, id, "logs", rel); !bytes.Equal(got, data) {
			t.Errorf("%s: %q, want %q", rel, got, data)
		}
	}
	must(t, "verify after resume", verifyTreeOK(tr, id))
	finishedOnly(t, b, 1)

	// An interrupted upload of another folder is removed whole by a sweep.
	interruptTree(t, b, writeTree(t, "other", files), 2)
	got, err := sweepAll(t, ctx, b, time.Now().Add(time.Hour), false, func() {
		must(t, "mark used", b.MarkUsed(ctx, []string{id}, time.Now().Add(2*time.Hour)))
	})
	must(t, "sweep", err)
	removed := 0
	for gid, o := range got {
		if gid != id && o == store.Removed {
			removed++
		}
	}
	if len(got) != 2 || got[id] != store.Kept || removed != 1 {
		t.Fatalf("sweep outcomes %v: want the unfinished upload removed and %s kept", got, id)
	}
	l, err = b.List(ctx)
	must(t, "list", err)
	if len(l.Entries) != 1 || l.Entries[0].ID != id || len(l.Skipped) != 0 {
		t.Fatalf("after sweeping the unfinished folder upload: %+v, skipped %+v", l.Entries, l.Skipped)
	}
}

// testTreeResumeShrunk: files a killed run stored and the folder no longer holds are no part of
// the upload that the next run finishes. A backend that takes up the same unfinished upload
// (locally, one of the same folder) must drop them before it publishes: otherwise the upload is
// finished with files its listing does not name, and verify says they "were added".
func testTreeResumeShrunk(t *testing.T, h Harness) {
	b := h.New(t)
	tr := trees(t, b)
	files := letterFiles(8)
	root := writeTree(t, "logs", files)
	if err := interruptTree(t, b, root, 3); err == nil {
		t.Fatal("an upload cancelled after its third file finished")
	}
	// The folder loses a file the killed run stored, a whole folder of it, and one it did not.
	must(t, "remove", os.Remove(filepath.Join(root, "a", "f.txt")))
	must(t, "remove", os.RemoveAll(filepath.Join(root, "b")))
	must(t, "remove", os.Remove(filepath.Join(root, "h", "f.txt")))
	delete(files, "a/f.txt")
	delete(files, "b/f.txt")
	delete(files, "h/f.txt")
	rec, err := uploadTree(t, ctx, b, root, nil)
	must(t, "upload the smaller folder", err)
	id := rec.Upload.ID
	must(t, "verify after the resume", verifyTreeOK(tr, id))
	ti, err := tr.TreeInfo(ctx, id)
	must(t, "tree info", err)
	if len(ti.Files) != len(files) {
		t.Fatalf("the finished upload lists %d files, want %d", len(ti.Files), len(files))
	}
	for _, rel := range []string{"a/f.txt", "b/f.txt"} {
		_, err := tr.OpenTreeFile(ctx, id, "logs", rel)
		wantCode(t, "open "+rel+", removed from the folder before the resume", err, fault.UploadMissing)
	}
}

func testTreeVerify(t *testing.T, h Harness) {
	if h.EditTreeFile == nil {
		t.Skip("the harness cannot change a file inside an upload")
	}
	b := h.New(t)
	tr := trees(t, b)
	files := treeFiles()
	rec, err := uploadTree(t, ctx, b, writeTree(t, "proj", files), nil)
	must(t, "upload", err)
	id := rec.Upload.ID
	h.EditTreeFile(t, b, id, "proj", "a/main.go", []byte("package A\n"))
	h.EditTreeFile(t, b, id, "proj", "b/main.go", nil)
	h.EditTreeFile(t, b, id, "proj", "c/new.txt", []byte("added\n"))
	_, err = tr.VerifyTree(ctx, id, nil)
	wantCode(t, "verify a changed folder upload", err, fault.VerifyMismatch)
	msg := err.Error()
	for _, want := range []string{"a/main.go changed", "b/main.go", "c/new.txt was added"} {
		if !strings.Contains(msg, want) {
			t.Errorf("verify says %q; want it to name %q", msg, want)
		}
	}
	for _, not := range []string{"deep/er", "big.bin", "b-c/x"} {
		if strings.Contains(msg, not) {
			t.Errorf("verify names %s, which did not change: %q", not, msg)
		}
	}
	// The stage's verify of the record says so too.
	err = stage.VerifyRecord(ctx, b, rec, nil)
	wantCode(t, "verify the record", err, fault.VerifyMismatch)
	if rec.Verified == nil || rec.Verified.OK {
		t.Fatalf("record verified %+v after a failed verify", rec.Verified)
	}
}

func testTreeSweep(t *testing.T, h Harness) {
	b := h.New(t)
	tr := trees(t, b)
	files := treeFiles()
	a, err := uploadTree(t, ctx, b, writeTree(t, "proj", files), nil)
	must(t, "upload a", err)
	kept, err := uploadTree(t, ctx, b, writeTree(t, "kept", files), nil)
	must(t, "upload kept", err)
	one := upload(t, b, "proj", []byte("a file upload of the same name"))
	cutoff := time.Now().Add(time.Hour)
	must(t, "mark used", b.MarkUsed(ctx, []string{kept.Upload.ID, one.ID}, cutoff.Add(time.Minute)))
	got, err := sweepAll(t, ctx, b, cutoff, false, nil)
	must(t, "sweep", err)
	if len(got) != 1 || got[a.Upload.ID] != store.Removed {
		t.Fatalf("sweep outcomes %v, want only %s removed", got, a.Upload.ID)
	}
	_, err = tr.TreeInfo(ctx, a.Upload.ID)
	wantCode(t, "tree info of a swept folder upload", err, fault.UploadMissing)
	_, err = tr.OpenTreeFile(ctx, a.Upload.ID, "proj", "a/main.go")
	wantCode(t, "a file of a swept folder upload", err, fault.UploadMissing)
	err = b.MarkUsed(ctx, []string{a.Upload.ID}, time.Now())
	wantCode(t, "mark a swept folder upload used", err, fault.UploadMissing)
	l, err := b.List(ctx)
	must(t, "list", err)
	if len(l.Entries) != 2 || len(l.Skipped) != 0 {
		t.Fatalf("after the sweep: %+v, skipped %+v; want the two used uploads and nothing else", l.Entries, l.Skipped)
	}
	must(t, "verify the folder upload kept", verifyTreeOK(tr, kept.Upload.ID))
	if got := readAll(t, b, one.ID, "proj"); string(got) != "a file upload of the same name" {
		t.Fatalf("the file upload beside reads %q", got)
	}
	// Swept again with everything stale: the kept folder upload goes whole too.
	got, err = sweepAll(t, ctx, b, cutoff.Add(time.Hour), false, nil)
	must(t, "sweep all", err)
	if got[kept.Upload.ID] != store.Removed || got[one.ID] != store.Removed {
		t.Fatalf("second sweep: %v", got)
	}
	if l, err := b.List(ctx); err != nil || len(l.Entries) != 0 || len(l.Skipped) != 0 {
		t.Fatalf("after sweeping everything: %+v, %v", l, err)
	}
}

func testTreeOpenGuarded(t *testing.T, h Harness) {
	b := h.New(t)
	tr := trees(t, b)
	rec, err := uploadTree(t, ctx, b, writeTree(t, "proj", map[string][]byte{"a/main.go": []byte("x"), "top": []byte("y")}), nil)
	must(t, "upload", err)
	id := rec.Upload.ID
	for _, rel := range []string{"", "../top", "/etc/passwd", "a/../top", "a//main.go", ".", "a/./main.go", "a/"} {
		_, err := tr.OpenTreeFile(ctx, id, "proj", rel)
		wantCode(t, "open "+rel, err, fault.UploadInvalid)
	}
	for _, name := range []string{"", "..", "a/b", store.TreeListName} {
		_, err := tr.OpenTreeFile(ctx, id, name, "top")
		wantCode(t, "open in folder "+name, err, fault.UploadInvalid)
	}
	_, err = tr.OpenTreeFile(ctx, "not-an-id", "proj", "top")
	wantCode(t, "open with a bad id", err, fault.UploadInvalid)
	_, err = tr.OpenTreeFile(ctx, id, "proj", "nope")
	wantCode(t, "open a file the folder does not hold", err, fault.UploadMissing)
	_, err = tr.OpenTreeFile(ctx, id, "other", "top")
	wantCode(t, "open in a folder of another name", err, fault.UploadMissing)
	if got := readTreeFile(t, tr, id, "proj", "a/main.go"); string(got) != "x" {
		t.Fatalf("a/main.go reads %q", got)
	}
}

// testTreeNameAgainMarksUsed: a folder whose upload is finished already is named again, and that
// upload is marked used as it is (docs/commands.md, upload), as a file's is
// (StageNameAgainMarksUsed): a sweep whose cutoff is later than its last use keeps it.
func testTreeNameAgainMarksUsed(t *testing.T, h Harness) {
	b := h.New(t)
	root := writeTree(t, "proj", map[string][]byte{"a/x": []byte("x\n"), "y": []byte("y\n")})
	rec, err := uploadTree(t, ctx, b, root, nil)
	must(t, "upload folder", err)
	before := time.Now().Truncate(time.Second) // a marker keeps at least whole seconds
	must(t, "mark used an hour ago", b.MarkUsed(ctx, []string{rec.Upload.ID}, before.Add(-time.Hour)))
	if e := finishedOnly(t, b, 1)[0]; !e.LastUsed.Before(before) {
		t.Fatalf("marked used an hour ago, its last use is %v", e.LastUsed)
	}
	again, err := uploadTree(t, ctx, b, root, nil)
	must(t, "upload folder again", err)
	if again.Upload == nil || again.Upload.ID != rec.Upload.ID {
		t.Fatalf("uploaded again as %+v, want %s named again", again.Upload, rec.Upload.ID)
	}
	e := finishedOnly(t, b, 1)[0]
	if e.LastUsed.Before(before) {
		t.Fatalf("named again, its last use is %v (before %v): a sweep with a later cutoff removes the folder upload just named", e.LastUsed, before)
	}
}

// testTreeFolderRemoved: a folder upload whose folder was removed by hand, its metadata and
// listing left, verifies as every listed file missing, and as nothing else, on every backend
// (docs/store.md, "Folder uploads"): the same as a folder that lost its files one by one.
func testTreeFolderRemoved(t *testing.T, h Harness) {
	if h.RemoveFromUpload == nil {
		t.Skip("the harness cannot remove a part of an upload")
	}
	b := h.New(t)
	tr := trees(t, b)
	files := treeFiles()
	rec, err := uploadTree(t, ctx, b, writeTree(t, "proj", files), nil)
	must(t, "upload", err)
	id := rec.Upload.ID
	h.RemoveFromUpload(t, b, id, "proj")
	_, err = tr.VerifyTree(ctx, id, nil)
	wantCode(t, "verify a folder upload whose folder was removed", err, fault.VerifyMismatch)
	var m *store.TreeMismatch
	if !errors.As(err, &m) {
		t.Fatalf("verify: %v; want its TreeMismatch", err)
	}
	var got []string
	for _, f := range m.Faults {
		if f.What != store.TreeMissing {
			t.Errorf("verify found %q (what %d); want only files missing", f.Text, f.What)
		}
		got = append(got, f.Rel)
	}
	if want := sortedRels(files); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("verify names missing %q; want every file of the folder %q", got, want)
	}
	// The stage's verify of the record says so too, and the upload stays listed: it is still
	// an upload of the store, whose files are gone (a user uploads the folder again).
	wantCode(t, "verify the record", stage.VerifyRecord(ctx, b, rec, nil), fault.VerifyMismatch)
	if e := finishedOnly(t, b, 1)[0]; e.ID != id || !e.Folder {
		t.Fatalf("listed %+v; want the folder upload %s", e, id)
	}
}

// testTreeWithoutMeta: a folder upload whose metadata (.upload.json) was removed by hand, its
// listing and files left, is no upload, on every backend (docs/store.md, "What counts as an
// upload"): not listed (not as a file upload named after its listing either), named in the
// listing's skips, never removed by a sweep, and upload.missing to info, tree info and a mark.
func testTreeWithoutMeta(t *testing.T, h Harness) {
	if h.RemoveFromUpload == nil {
		t.Skip("the harness cannot remove a part of an upload")
	}
	b := h.New(t)
	tr := trees(t, b)
	rec, err := uploadTree(t, ctx, b, writeTree(t, "proj", map[string][]byte{"a/x": []byte("x\n"), "y": []byte("y\n")}), nil)
	must(t, "upload", err)
	id := rec.Upload.ID
	kept := upload(t, b, "kept.txt", []byte("an upload beside"))
	h.RemoveFromUpload(t, b, id, store.MetaName)
	l, err := b.List(ctx)
	must(t, "list", err)
	if len(l.Entries) != 1 || l.Entries[0].ID != kept.ID {
		t.Fatalf("listed %+v; want only the file upload %s: a folder upload without its metadata is no upload", l.Entries, kept.ID)
	}
	if len(l.Skipped) != 1 || !strings.Contains(l.Skipped[0].Path, id) || !strings.HasPrefix(l.Skipped[0].Why, "not an upload of this store: ") {
		t.Fatalf("skipped %+v; want %s named as not an upload of this store", l.Skipped, id)
	}
	_, err = b.Info(ctx, id)
	wantCode(t, "info", err, fault.UploadMissing)
	_, err = tr.TreeInfo(ctx, id)
	wantCode(t, "tree info", err, fault.UploadMissing)
	wantCode(t, "mark it used", b.MarkUsed(ctx, []string{id}, time.Now()), fault.UploadMissing)
	got, err := sweepAll(t, ctx, b, time.Now().Add(time.Hour), false, nil)
	must(t, "sweep", err)
	if len(got) != 1 || got[kept.ID] != store.Removed {
		t.Fatalf("sweep outcomes %v; want only %s removed, and what is no upload left alone", got, kept.ID)
	}
	if l, err := b.List(ctx); err != nil || len(l.Entries) != 0 || len(l.Skipped) != 1 {
		t.Fatalf("after the sweep: %+v, %v; want the skip still there", l, err)
	}
}

// testTreeLargeListing: a folder whose listing is over a MiB (long paths, many files) is read
// back whole, as every store reads a listing: info, ls, verify and each file.
func testTreeLargeListing(t *testing.T, h Harness) {
	b := h.New(t)
	tr := trees(t, b)
	// Each line of the listing is 784 bytes (a BLAKE3, two spaces, a 717-byte path): 1,400 of them
	// are 1,097,600 bytes. The path stays below S3's 1,024-byte keys and a file system's 255-byte
	// names.
	dir := strings.Repeat("l", 240) + "/" + strings.Repeat("m", 240) + "/"
	files := map[string][]byte{}
	for i := range 1400 {
		files[dir+strings.Repeat("n", 230)+fmt.Sprintf("%05d", i)] = []byte{byte(i)}
	}
	root := writeTree(t, "wide", files)
	rec, err := uploadTree(t, ctx, b, root, nil)
	must(t, "upload folder", err)
	id := rec.Upload.ID
	ti, err := tr.TreeInfo(ctx, id)
	must(t, "tree info", err)
	if len(ti.Files) != len(files) || ti.Blake3 != rec.Blake3 {
		t.Fatalf("tree info: %d files, %s; want %d, %s", len(ti.Files), ti.Blake3, len(files), rec.Blake3)
	}
	must(t, "verify", verifyTreeOK(tr, id))
	l, err := b.List(ctx)
	must(t, "list", err)
	if len(l.Entries) != 1 || !l.Entries[0].Folder || l.Entries[0].Files != len(files) || len(l.Skipped) != 0 {
		t.Fatalf("list: %+v, skipped %+v; want the folder upload of %d files", l.Entries, l.Skipped, len(files))
	}
	last := ti.Files[len(ti.Files)-1].Rel
	if got := readTreeFile(t, tr, id, "wide", last); !bytes.Equal(got, files[last]) {
		t.Fatalf("%s reads back %v, not %v", last, got, files[last])
	}
	again, err := uploadTree(t, ctx, b, root, nil)
	must(t, "upload again", err)
	if again.Upload.ID != id {
		t.Fatalf("the same folder again is upload %s, not %s", again.Upload.ID, id)
	}
}

// testTreeUnfinishedWritten: an unfinished folder upload was last written when the newest file
// of its tree was, as a file upload when its newest bytes were; not when it was begun. A sweep
// whose cutoff falls between the two keeps it, on every backend.
func testTreeUnfinishedWritten(t *testing.T, h Harness) {
	b := h.New(t)
	root := writeTree(t, "logs", letterFiles(26))
	interruptTree(t, b, root, 2)
	unfinished := func() store.Entry {
		l, err := b.List(ctx)
		must(t, "list", err)
		if len(l.Entries) != 1 || l.Entries[0].Finished {
			t.Fatalf("after interrupted runs: %+v; want one unfinished upload", l.Entries)
		}
		return l.Entries[0]
	}
	first := unfinished()
	time.Sleep(1100 * time.Millisecond) // an object store keeps whole seconds
	cutoff := time.Now().Truncate(time.Second)
	// The same upload resumed until it has written more files, after the cutoff (an object
	// store may have taken every file the first run sent before it stopped).
	e := first
	for after := 3; e.Size == first.Size && after < 20; after += 4 {
		interruptTree(t, b, root, after)
		e = unfinished()
	}
	if e.Size == first.Size {
		t.Fatalf("resumed runs wrote nothing: %+v", e)
	}
	if e.LastUsed.Before(cutoff) || !e.Made.Before(cutoff) {
		t.Fatalf("unfinished folder upload begun %v, last written %v; want begun before %v and last written since", e.Made, e.LastUsed, cutoff)
	}
	got, err := sweepAll(t, ctx, b, cutoff, false, nil)
	must(t, "sweep", err)
	if len(got) != 0 {
		t.Fatalf("a sweep with a cutoff before its last file: %v; want it kept (no candidate)", got)
	}
}
