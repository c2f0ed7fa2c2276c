package acp

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
)

// --workdir: every file of the prompt, inline ones too, is copied read-only into the work folder,
// checked by BLAKE3; the links name the copies and the context block names every copy. An intact
// copy is reused, a missing one restored; one the agent changed is never overwritten: the link
// names it and the context block says it changed and how to get the original.
func TestResolveWorkdir(t *testing.T) {
	s := testStore(t)
	work := filepath.Join(t.TempDir(), "work")
	data := rsBytes(5000, 1)
	bin := rsPut(t, s, "b.bin", "", data)
	img := rsPut(t, s, "Screen Shot 2026-11-30 at 10.00.00\u202fAM.png", "image/png", rsPNG(t, 4096, 2))
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
	if res.Copied != 3 || res.Reused != 0 || res.Inline != 1 || res.Embedded != 1 {
		t.Fatalf("copied %d reused %d, inline %d, embedded %d: want all three copied, one inline, one embedded", res.Copied, res.Reused, res.Inline, res.Embedded)
	}
	if got := rsFilePath(t, blocks[0].URI); got != copyOf(bin) {
		t.Fatalf("link names %s, not the copy", got)
	}
	if got := rsFilePath(t, blocks[2].Resource.URI); got != copyOf(txt) {
		t.Fatalf("embedded file names %s, not the copy", got)
	}
	ctx := blocks[len(blocks)-1].Text
	for _, r := range []*manifest.Record{bin, img, txt} {
		p := copyOf(r)
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode() != 0o400 {
			t.Fatalf("%s: %v %v, want a regular file of mode 0400", p, fi.Mode(), err)
		}
		if di, err := os.Lstat(filepath.Dir(p)); err != nil || di.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v %v", filepath.Dir(p), di.Mode(), err)
		}
		if got, _ := os.ReadFile(p); !bytes.Equal(got, rsData(t, s, r)) {
			t.Fatalf("the copy of %s is not the upload", r.Name)
		}
		if !strings.Contains(ctx, "\n- "+p+" (") {
			t.Fatalf("the context block does not name the copy %s as it is:\n%s", p, ctx)
		}
	}
	if !strings.Contains(ctx, copyOf(img)+" (image/png, 4096 bytes): inline in this prompt too") {
		t.Fatalf("the inline image's copy is not named as such:\n%s", ctx)
	}
	// Intact copies are reused, untouched.
	before, _ := os.Lstat(copyOf(bin))
	res, _ = resolve()
	after, _ := os.Lstat(copyOf(bin))
	if res.Copied != 0 || res.Reused != 3 || !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
		t.Fatalf("copied %d reused %d, same file %v", res.Copied, res.Reused, os.SameFile(before, after))
	}
	// The agent edits one copy and removes another: the edit stays, the missing one is restored.
	os.Chmod(copyOf(bin), 0o600)
	edited := append([]byte("edited by the agent\n"), data[20:]...)
	if err := os.WriteFile(copyOf(bin), edited, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(copyOf(img))
	res, blocks = resolve()
	if res.Copied != 1 || res.Reused != 1 || res.Changed != 1 {
		t.Fatalf("copied %d reused %d changed %d, want the image restored and the edit kept", res.Copied, res.Reused, res.Changed)
	}
	if got, _ := os.ReadFile(copyOf(bin)); !bytes.Equal(got, edited) {
		t.Fatal("the agent's edit was overwritten")
	}
	if got := rsFilePath(t, blocks[0].URI); got != copyOf(bin) {
		t.Fatalf("link names %s, not the edited copy", got)
	}
	ctx = blocks[len(blocks)-1].Text
	line := "\n- " + copyOf(bin) + " (application/octet-stream, 5000 bytes); changed on disk since it was attached (left as it is); the original is upload " + bin.Upload.ID + ": remove this copy and resolve again to restore it"
	if !strings.Contains(ctx, line) {
		t.Fatalf("the context block does not say the copy changed:\n%s\nwant a line:%s", ctx, line)
	}
	if got, _ := os.ReadFile(copyOf(img)); !bytes.Equal(got, rsData(t, s, img)) {
		t.Fatal("the removed copy was not restored")
	}
	// A symlink where a copy is, a folder that is not a real folder: refused, nothing linked, no
	// marker written.
	os.Remove(copyOf(txt))
	outside := filepath.Join(t.TempDir(), "outside")
	os.WriteFile(outside, []byte("# Notes\n"), 0o400)
	if err := os.Symlink(outside, copyOf(txt)); err != nil {
		t.Fatal(err)
	}
	fresh := rsPut(t, s, "fresh.bin", "", rsBytes(10, 3))
	in = rsPrompt(t, []*manifest.Record{bin, img, txt, fresh}, "")
	if _, err := Resolve(in, rsLocal(s), opts); fault.CodeOf(err) != fault.UploadUnreadable || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("%v, want upload.unreadable", err)
	}
	if m := rsMarkers(t, s, fresh.Upload.ID); m[0] != "" {
		t.Fatal("a refused resolve marked an upload used")
	}
	os.Remove(copyOf(txt))
	os.RemoveAll(filepath.Join(work, bin.Upload.ID))
	if err := os.Symlink(t.TempDir(), filepath.Join(work, bin.Upload.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(in, rsLocal(s), opts); fault.CodeOf(err) != fault.UploadUnreadable || !strings.Contains(err.Error(), "not a real folder") {
		t.Fatalf("%v, want upload.unreadable", err)
	}
}

// The work folder is trusted only when it is ours: a folder or copy writable by others, or a copy
// with a second hard link, is upload.unreadable, and nothing is linked or marked.
func TestResolveWorkdirTrust(t *testing.T) {
	s := testStore(t)
	rec := rsPut(t, s, "b.bin", "", rsBytes(5000, 1))
	in := rsPrompt(t, []*manifest.Record{rec}, "")
	for _, c := range []struct {
		name, want string
		spoil      func(work, copy string)
	}{
		{"work folder writable by others", "writable by others", func(work, _ string) { os.Chmod(work, 0o777) }},
		{"copy's folder group-writable", "writable by others", func(_, copy string) { os.Chmod(filepath.Dir(copy), 0o770) }},
		{"copy writable by others", "writable by others", func(_, copy string) { os.Chmod(copy, 0o666) }},
		{"copy with a second hard link", "2 hard links", func(work, copy string) { os.Link(copy, filepath.Join(work, "held")) }},
		// Another user's: a second uid owns the folder or the copy (the tests run as root in CI,
		// which may give files away; as another user they skip).
		{"work folder another user's", "owned by uid 65534", func(work, _ string) { chownOther(t, work) }},
		{"copy's folder another user's", "owned by uid 65534", func(_, copy string) { chownOther(t, filepath.Dir(copy)) }},
		{"copy another user's", "owned by uid 65534", func(_, copy string) { chownOther(t, copy) }},
		{"work folder a symlink", "not a real folder", func(work, _ string) {
			real := work + ".real"
			os.Rename(work, real)
			os.Symlink(real, work)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			work := filepath.Join(t.TempDir(), "work")
			if _, err := Resolve(in, rsLocal(s), Options{Workdir: work}); err != nil {
				t.Fatal(err)
			}
			copy := filepath.Join(work, rec.Upload.ID, rec.Name)
			c.spoil(work, copy)
			used := rsMarkers(t, s, rec.Upload.ID)
			_, err := Resolve(in, rsLocal(s), Options{Workdir: work, Now: time.Unix(2e9, 0)})
			if fault.CodeOf(err) != fault.UploadUnreadable || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want upload.unreadable saying %q", err, c.want)
			}
			if after := rsMarkers(t, s, rec.Upload.ID); after[0] != used[0] {
				t.Fatal("a refused resolve marked the upload used")
			}
		})
	}
}

// chownOther gives path to uid and gid 65534 (nobody), a user other than the one running.
func chownOther(t *testing.T, path string) {
	t.Helper()
	if runtime.GOOS == "windows" || os.Getuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI runs the tests as root, to give a file to another user")
		}
		t.Skip("not root: cannot give a file to another user")
	}
	if err := os.Lchown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
}

// A killed resolve's half-written copy is removed by the next run that copies into its folder;
// a live run's is left alone.
func TestResolveWorkdirCleansKilledCopy(t *testing.T) {
	s := testStore(t)
	work := filepath.Join(t.TempDir(), "work")
	rec := rsPut(t, s, "b.bin", "", rsBytes(5000, 1))
	dir := filepath.Join(work, rec.Upload.ID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// A process that ran and is gone: its pid is free.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(dir, fmt.Sprintf(".attachctl-%d-abc.tmp", cmd.Process.Pid))
	live := filepath.Join(dir, fmt.Sprintf(".attachctl-%d-def.tmp", os.Getppid()))
	for _, p := range []string{dead, live} {
		if err := os.WriteFile(p, []byte("half"), 0o400); err != nil {
			t.Fatal(err)
		}
	}
	res, err := Resolve(rsPrompt(t, []*manifest.Record{rec}, ""), rsLocal(s), Options{Workdir: work})
	if err != nil || res.Copied != 1 {
		t.Fatalf("%v, copied %d", err, res.Copied)
	}
	if _, err := os.Lstat(dead); !os.IsNotExist(err) {
		t.Fatalf("the killed run's copy is still there: %v", err)
	}
	if _, err := os.Lstat(live); err != nil {
		t.Fatalf("a running process's copy was removed: %v", err)
	}
}

// A copy whose bytes are not the BLAKE3 the store recorded is refused and nothing is left of it.
func TestResolveWorkdirChecksBlake3(t *testing.T) {
	s := testStore(t)
	work := filepath.Join(t.TempDir(), "work")
	rec := rsPut(t, s, "b.bin", "", rsBytes(5000, 1))
	_, err := Resolve(rsPrompt(t, []*manifest.Record{rec}, ""), badSum{rsLocal(s)}, Options{Workdir: work})
	if fault.CodeOf(err) != fault.UploadUnreadable || !bytes.Contains([]byte(err.Error()), []byte("not the upload the store recorded")) {
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
	if _, err := Resolve(in, rsLocal(s), Options{Workdir: work, Caps: Caps{Image: true}}); fault.CodeOf(err) != fault.UploadUnreadable {
		t.Fatalf("%v, want upload.unreadable", err)
	}
	if m := rsMarkers(t, s, img.Upload.ID, bin.Upload.ID); m[0] != "" || m[1] != "" {
		t.Fatalf("markers written by a failed resolve: %q", m)
	}
}

// countOpens counts the opens of a store's uploads.
type countOpens struct {
	Uploads
	n *atomic.Int32
}

func (c countOpens) Open(id, name string) (*Upload, error) {
	c.n.Add(1)
	return c.Uploads.Open(id, name)
}

// With a work folder, an inline file's data is read from the copy this run checked, not fetched
// from the store again (a store behind a network pays a round trip per fetch); the output is the
// same. A copy changed since is not read: the data comes from the store.
func TestResolveInlineFromCheckedCopy(t *testing.T) {
	s := testStore(t)
	work := filepath.Join(t.TempDir(), "work")
	img := rsPut(t, s, "a.png", "image/png", rsPNG(t, 4096, 2))
	bin := rsPut(t, s, "b.bin", "", rsBytes(5000, 1))
	in := rsPrompt(t, []*manifest.Record{img, bin}, "")
	want, err := Resolve(in, rsLocal(s), Options{Caps: Caps{Image: true}})
	if err != nil {
		t.Fatal(err)
	}
	wantBlocks := rsBlocks(t, rsOutput(t, want))
	var n atomic.Int32
	u := countOpens{rsLocal(s), &n}
	opts := Options{Workdir: work, Caps: Caps{Image: true}}
	for run := 0; run < 2; run++ {
		n.Store(0)
		res, err := Resolve(in, u, opts)
		if err != nil {
			t.Fatal(err)
		}
		blocks := rsBlocks(t, rsOutput(t, res))
		if blocks[0].Data != wantBlocks[0].Data {
			t.Fatalf("run %d: the inline data is not the upload", run)
		}
		// Each upload is opened to be examined; the first run copies both; none is opened to
		// write the inline data.
		if want := map[int]int32{0: 4, 1: 2}[run]; n.Load() != want {
			t.Fatalf("run %d: %d opens of the store, want %d", run, n.Load(), want)
		}
	}
	// The agent edits the image's copy: the inline data is the upload's, read from the store
	// twice (checked before any output, then written: verify.go).
	cp := filepath.Join(work, img.Upload.ID, img.Name)
	os.Chmod(cp, 0o600)
	if err := os.WriteFile(cp, rsPNG(t, 4096, 3), 0o600); err != nil {
		t.Fatal(err)
	}
	n.Store(0)
	res, err := Resolve(in, u, opts)
	if err != nil {
		t.Fatal(err)
	}
	if blocks := rsBlocks(t, rsOutput(t, res)); blocks[0].Data != wantBlocks[0].Data || n.Load() != 4 || res.Changed != 1 {
		t.Fatalf("after the edit: data equal %v, %d opens, %d changed", blocks[0].Data == wantBlocks[0].Data, n.Load(), res.Changed)
	}
}
