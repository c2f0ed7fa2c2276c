package acp

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest"
)

// --workdir: each by-path (or embedded) file is copied read-only into the work folder, checked by
// BLAKE3, and the link names the copy; an intact copy is reused; a damaged or replaced one is
// replaced by a new file renamed over it, never written in place.
func TestResolveWorkdir(t *testing.T) {
	s := testStore(t)
	work := filepath.Join(t.TempDir(), "work")
	data := rsBytes(5000, 1)
	bin := rsPut(t, s, "b.bin", "", data)
	img := rsPut(t, s, "a.png", "image/png", rsPNG(t, 4096, 2))
	txt := rsPut(t, s, "notes.md", "text/plain", []byte("# Notes\n"))
	in := rsPrompt(t, []*manifest.Record{bin, img, txt}, "")
	opts := Options{Workdir: work, Caps: Caps{Image: true, EmbeddedContext: true}}
	copyOf := func(r *manifest.Record) string { return filepath.Join(work, r.Upload.ID, r.Name) }

	resolve := func() (*Resolution, []rsBlock) {
		t.Helper()
		res, err := Resolve(in, rsLocal(s), opts)
		if err != nil {
			t.Fatal(err)
		}
		doc := rsOutput(t, res)
		rsValidate(t, doc)
		return res, rsBlocks(t, doc)
	}
	res, blocks := resolve()
	if res.Copied != 2 || res.Reused != 0 {
		t.Fatalf("copied %d reused %d, want the link and the embedded file copied", res.Copied, res.Reused)
	}
	if got := rsFilePath(t, blocks[0].URI); got != copyOf(bin) {
		t.Fatalf("link names %s, not the copy", got)
	}
	if got := rsFilePath(t, blocks[2].Resource.URI); got != copyOf(txt) {
		t.Fatalf("embedded file names %s, not the copy", got)
	}
	if _, err := os.Lstat(copyOf(img)); !os.IsNotExist(err) {
		t.Fatalf("an inline image was copied: %v", err)
	}
	for _, p := range []string{copyOf(bin), copyOf(txt)} {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode() != 0o400 {
			t.Fatalf("%s: %v %v, want a regular file of mode 0400", p, fi.Mode(), err)
		}
		if di, err := os.Lstat(filepath.Dir(p)); err != nil || di.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v %v", filepath.Dir(p), di.Mode(), err)
		}
	}
	got, _ := os.ReadFile(copyOf(bin))
	if !bytes.Equal(got, data) {
		t.Fatal("the copy is not the upload")
	}
	if !bytes.Contains([]byte(blocks[len(blocks)-1].Text), []byte(copyOf(bin))) {
		t.Fatalf("the context block does not name the copy: %s", blocks[len(blocks)-1].Text)
	}
	// Intact copies are reused, untouched.
	before, _ := os.Lstat(copyOf(bin))
	res, _ = resolve()
	after, _ := os.Lstat(copyOf(bin))
	if res.Copied != 0 || res.Reused != 2 || !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
		t.Fatalf("copied %d reused %d, same file %v", res.Copied, res.Reused, os.SameFile(before, after))
	}
	// A damaged copy, and one replaced by a symlink, are replaced; the damaged file itself (a
	// second link to it stands for a reader that has it open) is left as it was.
	os.Chmod(copyOf(bin), 0o600)
	os.WriteFile(copyOf(bin), append([]byte("X"), data[1:]...), 0o600)
	os.Chmod(copyOf(bin), 0o400)
	keep := filepath.Join(t.TempDir(), "held")
	if err := os.Link(copyOf(bin), keep); err != nil {
		t.Fatal(err)
	}
	os.Remove(copyOf(txt))
	outside := filepath.Join(t.TempDir(), "outside")
	os.WriteFile(outside, []byte("# Notes\n"), 0o400)
	if err := os.Symlink(outside, copyOf(txt)); err != nil {
		t.Fatal(err)
	}
	res, _ = resolve()
	if res.Copied != 2 || res.Reused != 0 {
		t.Fatalf("copied %d reused %d, want both replaced", res.Copied, res.Reused)
	}
	if got, _ := os.ReadFile(copyOf(bin)); !bytes.Equal(got, data) {
		t.Fatal("the damaged copy was not replaced")
	}
	if held, _ := os.ReadFile(keep); held[0] != 'X' {
		t.Fatal("the damaged copy was rewritten in place")
	}
	if fi, err := os.Lstat(copyOf(txt)); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the symlink was not replaced by a copy: %v", err)
	}
	// A folder that is not a real folder is refused, nothing marked beyond what was.
	os.RemoveAll(filepath.Join(work, bin.Upload.ID))
	if err := os.Symlink(t.TempDir(), filepath.Join(work, bin.Upload.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(in, rsLocal(s), opts); manifest.CodeOf(err) != manifest.UploadUnreadable {
		t.Fatalf("%v, want upload.unreadable", err)
	}
}

// A copy whose bytes are not the BLAKE3 the store recorded is refused and nothing is left of it.
func TestResolveWorkdirChecksBlake3(t *testing.T) {
	s := testStore(t)
	work := filepath.Join(t.TempDir(), "work")
	rec := rsPut(t, s, "b.bin", "", rsBytes(5000, 1))
	_, err := Resolve(rsPrompt(t, []*manifest.Record{rec}, ""), badSum{rsLocal(s)}, Options{Workdir: work})
	if manifest.CodeOf(err) != manifest.UploadUnreadable || !bytes.Contains([]byte(err.Error()), []byte("not the upload the store recorded")) {
		t.Fatalf("%v, want upload.unreadable", err)
	}
	left, _ := os.ReadDir(filepath.Join(work, rec.Upload.ID))
	if len(left) != 0 {
		t.Fatalf("left in the work folder: %v", left)
	}
}

// badSum is a store whose recorded BLAKE3 is wrong for every upload.
type badSum struct{ Uploads }

func (b badSum) Open(id, name string) (*Upload, error) {
	f, err := b.Uploads.Open(id, name)
	if f != nil {
		f.Blake3 = strings.Repeat("0", 64)
	}
	return f, err
}

// A resolve that fails at any step marks nothing used: here the work folder's copy cannot be
// made (where its folder should be is a file), after every upload was found and planned.
func TestResolveFailedMarksNothing(t *testing.T) {
	s := testStore(t)
	work := filepath.Join(t.TempDir(), "work")
	img := rsPut(t, s, "a.png", "image/png", rsPNG(t, 4096, 2))
	bin := rsPut(t, s, "b.bin", "", rsBytes(5000, 1))
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, bin.Upload.ID), []byte("in the way"), 0o600); err != nil {
		t.Fatal(err)
	}
	in := rsPrompt(t, []*manifest.Record{img, bin}, "")
	if _, err := Resolve(in, rsLocal(s), Options{Workdir: work, Caps: Caps{Image: true}}); manifest.CodeOf(err) != manifest.UploadUnreadable {
		t.Fatalf("%v, want upload.unreadable", err)
	}
	if m := rsMarkers(t, s, img.Upload.ID, bin.Upload.ID); m[0] != "" || m[1] != "" {
		t.Fatalf("markers written by a failed resolve: %q", m)
	}
}
