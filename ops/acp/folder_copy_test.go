package acp

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/zeebo/blake3"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// copyTree lists what is under dir: every regular file's path (slash-separated) -> its bytes;
// anything else (a temp file too) fails the test.
func copyTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	got := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if strings.HasPrefix(d.Name(), tmpPrefix) || !d.Type().IsRegular() {
			t.Errorf("left in the work folder: %s (%v)", rel, d.Type())
		}
		b, err := os.ReadFile(p)
		got[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// failingReader gives the first n bytes of b, then err.
type failingReader struct {
	b   []byte
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.b) == 0 {
		return 0, f.err
	}
	n := copy(p, f.b)
	f.b = f.b[n:]
	return n, nil
}

func (f *failingReader) Close() error { return nil }

// A folder's copy is made treeCopyJobs files at once; a file that fails in the middle (its
// store answers half of it, then the connection goes) is reported with the store's code and
// names that file, whatever finished first: the earlier of two failures in the listing's order
// is the one reported even when the later one failed first. No temp file is left, and every file
// that is in the copy is whole. The next run with the store well again completes the copy.
func TestCopyFolderFailsMidPool(t *testing.T) {
	const n = 40
	data := map[string][]byte{}
	var files []store.TreeFile
	for i := range n {
		rel := fmt.Sprintf("d%d/f%02d.txt", i%3, i)
		b := bytes.Repeat([]byte{byte(i)}, 100+i)
		h := blake3.Sum256(b)
		data[rel] = b
		files = append(files, store.TreeFile{Rel: rel, Size: int64(len(b)), Blake3: hex.EncodeToString(h[:])})
	}
	early, late := files[5].Rel, files[12].Rel // both among the first treeCopyJobs started
	earlyOpened, lateFailed := make(chan struct{}), make(chan struct{})
	broken := true
	open := func(rel string) (io.ReadCloser, error) {
		b := data[rel]
		if broken {
			switch rel {
			case late:
				<-earlyOpened
				defer close(lateFailed)
				return nil, fault.Errorf(fault.UploadMissing, "upload x: not in store")
			case early:
				close(earlyOpened)
				<-lateFailed // fails after the later file did
				return &failingReader{b: b[:len(b)/2], err: fault.Errorf(fault.StoreUnreachable, "store s3://b/p: connection reset")}, nil
			}
		}
		return io.NopCloser(bytes.NewReader(b)), nil
	}
	work := t.TempDir()
	root, err := os.OpenRoot(work)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	id := "0190f0c0-0000-7000-8000-000000000001"
	r := &ref{id: id, name: "logs", link: filepath.Join(work, id, "logs"),
		folder: &Folder{Files: files, Open: open}}

	_, err = copyFolder(root, r)
	if fault.CodeOf(err) != fault.StoreUnreachable || !strings.Contains(err.Error(), "logs/"+early) {
		t.Fatalf("%v, want store.unreachable naming logs/%s (the first failure in the listing's order)", err, early)
	}
	got := copyTree(t, work)
	if _, ok := got[id+"/logs/"+early]; ok {
		t.Errorf("%s is in the copy, half of it sent", early)
	}
	for rel, b := range got {
		if want := data[strings.TrimPrefix(rel, id+"/logs/")]; !bytes.Equal(b, want) {
			t.Errorf("%s in the copy: %d bytes, not the file's %d", rel, len(b), len(want))
		}
	}

	broken = false
	kept, err := copyFolder(root, r)
	if err != nil || kept {
		t.Fatalf("again: kept %v, %v; want the rest copied", kept, err)
	}
	got = copyTree(t, work)
	if len(got) != n {
		t.Fatalf("%d files in the copy, want %d", len(got), n)
	}
	for rel, b := range data {
		if !bytes.Equal(got[id+"/logs/"+rel], b) {
			t.Errorf("%s: not the file's bytes", rel)
		}
	}
	if kept, err := copyFolder(root, r); err != nil || !kept {
		t.Fatalf("a third time: kept %v, %v; want every file kept", kept, err)
	}
}

// The copy checks each file against the store's listing: a file of the folder upload changed in
// the store since it was finished (same size, other bytes) fails the resolve naming that file,
// and is not in the work folder, nor is a temp file.
func TestResolveFolderWorkdirCatchesChangedFile(t *testing.T) {
	s := testStore(t)
	files := map[string][]byte{}
	for i := range 6 {
		files[fmt.Sprintf("d%d/f%d.txt", i%2, i)] = []byte(strings.Repeat(fmt.Sprint(i), 50))
	}
	rec := rsFolder(t, s, "proj", files)
	in, err := Prompt([]*manifest.Record{rec}, PromptOptions{Session: "s", Text: "look", HasText: true})
	if err != nil {
		t.Fatal(err)
	}
	inside := filepath.Join(rec.Upload.Path, "d1", "f3.txt")
	if err := os.Chmod(inside, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inside, []byte(strings.Repeat("x", 50)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(inside, 0o400); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(t.TempDir(), "work")
	_, err = Resolve(in, rsLocal(s), Options{Workdir: work})
	if fault.CodeOf(err) != fault.UploadUnreadable || !strings.Contains(err.Error(), "prompt block 1:") ||
		!strings.Contains(err.Error(), "d1/f3.txt: its 50 bytes are not the file the store listed") {
		t.Fatalf("%v, want upload.unreadable naming d1/f3.txt", err)
	}
	got := copyTree(t, work)
	if _, ok := got[rec.Upload.ID+"/proj/d1/f3.txt"]; ok {
		t.Fatal("the changed file is in the work copy")
	}
	for rel, b := range got {
		if want := files[strings.TrimPrefix(rel, rec.Upload.ID+"/proj/")]; !bytes.Equal(b, want) {
			t.Errorf("%s in the copy is not the file's bytes", rel)
		}
	}
}

// A folder's files are written through temp files in the upload's folder of the work folder,
// beside the tree, never inside it (where the agent reads), named by this process so that the
// next resolve removes those a killed run left (as for a file's copy); a killed run's temp there
// is removed by the next copy of the folder.
func TestCopyFolderTempsBesideTree(t *testing.T) {
	s := testStore(t)
	files := map[string][]byte{"a.txt": []byte("one"), "d/b.txt": []byte("two"), "d/e/c.txt": []byte("three")}
	rec := rsFolder(t, s, "proj", files)
	in, err := Prompt([]*manifest.Record{rec}, PromptOptions{Session: "s", Text: "look", HasText: true})
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(t.TempDir(), "work")
	dir := filepath.Join(work, rec.Upload.ID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$") // a process that ran and is gone
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(dir, fmt.Sprintf("%s%d-abc.tmp", tmpPrefix, cmd.Process.Pid))
	if err := os.WriteFile(dead, []byte("half"), 0o400); err != nil {
		t.Fatal(err)
	}
	// Each file's temp is there while its bytes are read from the store: look then.
	u := rsLocal(s)
	var mu sync.Mutex
	var seen []string
	if _, err := Resolve(in, openSpy{u, func() {
		mu.Lock()
		defer mu.Unlock()
		filepath.WalkDir(work, func(p string, d fs.DirEntry, err error) error {
			if err == nil && strings.HasPrefix(d.Name(), fmt.Sprintf("%s%d-", tmpPrefix, os.Getpid())) {
				seen = append(seen, p)
			}
			return err
		})
	}}, Options{Workdir: work}); err != nil {
		t.Fatal(err)
	}
	if len(seen) == 0 {
		t.Fatal("no temp file seen while the files were read")
	}
	for _, p := range seen {
		if filepath.Dir(p) != dir {
			t.Errorf("temp %s is not in %s", p, dir)
		}
	}
	if _, err := os.Lstat(dead); !os.IsNotExist(err) {
		t.Fatalf("the killed run's temp is still there: %v", err)
	}
	got := copyTree(t, work)
	if len(got) != len(files) {
		t.Fatalf("copy: %d files, want %d", len(got), len(files))
	}
}

// openSpy is a store whose folder files' opens call spy first.
type openSpy struct {
	Uploads
	spy func()
}

func (o openSpy) OpenFolder(id, name string) (*Folder, error) {
	f, err := o.Uploads.(FolderUploads).OpenFolder(id, name)
	if f != nil {
		open := f.Open
		f.Open = func(rel string) (io.ReadCloser, error) { o.spy(); return open(rel) }
	}
	return f, err
}

// A failed file stops the copy of the files listed after it, never of those listed before it:
// the workers start in any order, and the copy has every file an ordered copy (cp) would have made
// before the failure. The failing file is the last one started before the pool is full, which a
// single-threaded scheduler runs first; the rounds cover the orders the race detector's shuffling
// gives.
func TestCopyFolderKeepsListingOrderOnFailure(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const n, bad = 40, treeCopyJobs - 1
	data := map[string][]byte{}
	var files []store.TreeFile
	for i := range n {
		rel := fmt.Sprintf("f%02d.txt", i)
		b := []byte(strings.Repeat(fmt.Sprint(i), 10))
		h := blake3.Sum256(b)
		data[rel] = b
		files = append(files, store.TreeFile{Rel: rel, Size: int64(len(b)), Blake3: hex.EncodeToString(h[:])})
	}
	open := func(rel string) (io.ReadCloser, error) {
		if rel == files[bad].Rel {
			return nil, fault.Errorf(fault.UploadMissing, "upload x: %s not in store", rel)
		}
		return io.NopCloser(bytes.NewReader(data[rel])), nil
	}
	id := "0190f0c0-0000-7000-8000-000000000002"
	for round := range 200 {
		work := t.TempDir()
		root, err := os.OpenRoot(work)
		if err != nil {
			t.Fatal(err)
		}
		r := &ref{id: id, name: "src", link: filepath.Join(work, id, "src"), folder: &Folder{Files: files, Open: open}}
		_, err = copyFolder(root, r)
		root.Close()
		if fault.CodeOf(err) != fault.UploadMissing || !strings.Contains(err.Error(), files[bad].Rel) {
			t.Fatalf("round %d: %v, want upload.missing naming %s", round, err, files[bad].Rel)
		}
		got := copyTree(t, work)
		for _, f := range files[:bad] {
			if !bytes.Equal(got[id+"/src/"+f.Rel], data[f.Rel]) {
				t.Fatalf("round %d: %s, listed before the failed %s, is not in the copy", round, f.Rel, files[bad].Rel)
			}
		}
	}
}
