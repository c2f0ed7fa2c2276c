//go:build unix

package local

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
)

// TestHelperUploader is not a test: run by TestConcurrentUploads as a separate process, it uploads
// the files named in $ATTACHCTL_TEST_FILES into $ATTACHCTL_TEST_STORE and prints one record a line.
func TestHelperUploader(t *testing.T) {
	store := os.Getenv("ATTACHCTL_TEST_STORE")
	if store == "" {
		t.Skip("a helper process for TestConcurrentUploads")
	}
	s, err := openStore(store, true)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	w := manifest.NewWriter(os.Stdout)
	for _, path := range strings.Split(os.Getenv("ATTACHCTL_TEST_FILES"), ",") {
		b, err := os.ReadFile(path)
		if err != nil {
			os.Exit(3)
		}
		rec := recordFor(path, b)
		if err := s.UploadRecord(context.Background(), rec, UploadOptions{Chunk: 4096}); err != nil {
			rec.Fail("upload", err, "")
		}
		w.Write(rec)
	}
	w.Flush()
	os.Exit(0)
}

// TestConcurrentUploads: goroutines and processes upload into one store at once, the same files
// and different ones. No two uploads share an id or a partial: every finished upload holds exactly
// its source's bytes, an id is only ever shared by records of the same content and name (dedupe),
// and no partial is left.
func TestConcurrentUploads(t *testing.T) {
	s := newStore(t)
	dir := t.TempDir()
	var files []string
	for i := range 6 {
		p := filepath.Join(dir, fmt.Sprintf("f%d.bin", i))
		writeRandom(t, p, 300<<10+i*1000, uint64(10+i))
		files = append(files, p)
	}
	// The same content under two paths and names too.
	b, _ := os.ReadFile(files[0])
	must(t, os.WriteFile(filepath.Join(dir, "same.bin"), b, 0o600))
	files = append(files, filepath.Join(dir, "same.bin"))

	var mu sync.Mutex
	var recs []*manifest.Record
	var wg sync.WaitGroup
	for g := range 4 { // goroutines, each with its own Store value, and two sharing one
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := s
			if g < 2 {
				st, _ = openStore(s.Dir, false)
			}
			for i := range files {
				path := files[(i+g)%len(files)]
				b, _ := os.ReadFile(path)
				rec := recordFor(path, b)
				if err := st.UploadRecord(context.Background(), rec, UploadOptions{Chunk: 4096}); err != nil {
					rec.Fail("upload", err, "")
				}
				mu.Lock()
				recs = append(recs, rec)
				mu.Unlock()
			}
		}()
	}
	var procs []*exec.Cmd
	var outs []*bytes.Buffer
	for g := range 3 {
		var order []string
		for i := range files {
			order = append(order, files[(i+2*g+1)%len(files)])
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperUploader$")
		cmd.Env = append(os.Environ(), "ATTACHCTL_TEST_STORE="+s.Dir, "ATTACHCTL_TEST_FILES="+strings.Join(order, ","))
		out := new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = out, os.Stderr
		must(t, cmd.Start())
		procs, outs = append(procs, cmd), append(outs, out)
	}
	wg.Wait()
	for i, cmd := range procs {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper %d: %v", i, err)
		}
		r := manifest.NewReader(outs[i])
		for {
			rec, err := r.Next()
			if err != nil {
				break
			}
			recs = append(recs, rec)
		}
	}
	if want := 7 * len(files); len(recs) != want {
		t.Fatalf("%d records, want %d", len(recs), want)
	}
	byID := map[string]string{}
	for _, rec := range recs {
		if rec.Failed() {
			t.Fatalf("%s: %v", rec.Path, rec.Error)
		}
		key := rec.Blake3 + "/" + rec.Name
		if k, ok := byID[rec.Upload.ID]; ok && k != key {
			t.Fatalf("id %s shared by %s and %s", rec.Upload.ID, k, key)
		}
		byID[rec.Upload.ID] = key
		f, err := s.openUploadFile(rec.Upload.ID, rec.Name)
		must(t, err)
		got, _ := readAllFile(f)
		if b3(got) != rec.Blake3 {
			t.Fatalf("%s: finished bytes are not the source's", rec.Upload.ID)
		}
	}
	if ids, _ := s.partialIDs(); len(ids) != 0 {
		t.Fatalf("partials left: %v", ids)
	}
	ids, _ := s.IDs()
	if len(ids) < len(files) {
		t.Fatalf("%d finished uploads for %d files", len(ids), len(files))
	}
	t.Logf("%d finished uploads for %d distinct files, %d records", len(ids), len(files), len(recs))
}

func readAllFile(f *os.File) ([]byte, error) {
	defer f.Close()
	var b bytes.Buffer
	_, err := b.ReadFrom(f)
	return b.Bytes(), err
}

// TestDiskFull: a store on a 2 MiB tmpfs. A chunk that does not fit is upload.diskFull and none of
// it is kept; the stage's upload is upload.diskFull with what was written kept, and resumes once
// space is freed, writing only the rest.
func TestDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("disk-full test: needs root to mount a small tmpfs")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("disk-full test: cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	s, err := openStore(filepath.Join(mnt, "store"), true)
	must(t, err)
	filler := filepath.Join(mnt, "filler")
	must(t, os.WriteFile(filler, make([]byte, 1<<20), 0o600))

	// Step by step.
	id, err := s.Begin(context.Background(), "chunk.bin", -1)
	must(t, err)
	off, err := s.Chunk(id, 0, bytes.NewReader(make([]byte, 1500<<10)), 0)
	wantCode(t, err, fault.UploadDiskFull)
	if off != 0 || dataSize(t, s, id) != 0 {
		t.Fatalf("a refused chunk kept bytes: %d", dataSize(t, s, id))
	}
	must(t, s.Abort(context.Background(), id))

	// The stage.
	path := filepath.Join(t.TempDir(), "big.bin")
	content := writeRandom(t, path, 1500<<10, 7)
	rec := recordFor(path, content)
	err = s.UploadRecord(context.Background(), rec, UploadOptions{Chunk: 64 << 10})
	wantCode(t, err, fault.UploadDiskFull)
	if !strings.Contains(err.Error(), "no space") {
		t.Fatalf("message: %v", err)
	}
	pid := onlyPartial(t, s)
	kept := dataSize(t, s, pid)
	if kept <= 0 || kept >= int64(len(content)) {
		t.Fatalf("kept %d bytes of %d", kept, len(content))
	}
	if !bytes.Equal(mustRead(t, filepath.Join(s.partialDir(pid), partialData)), content[:kept]) {
		t.Fatal("the kept bytes are not the source's prefix")
	}
	must(t, os.Remove(filler))
	before := wchar(t)
	rec = recordFor(path, content)
	must(t, s.UploadRecord(context.Background(), rec, UploadOptions{Chunk: 64 << 10}))
	if w := wchar(t) - before; w > int64(len(content))-kept+16<<10 {
		t.Fatalf("resume wrote %d bytes; %d were missing", w, int64(len(content))-kept)
	}
	if rec.Upload.ID != pid || !bytes.Equal(mustRead(t, rec.Upload.Path), content) {
		t.Fatal("the resumed upload is not the source under the first id")
	}
	var m Meta
	must(t, json.Unmarshal(mustRead(t, filepath.Join(s.UploadDir(pid), MetaName)), &m))
	if m.Blake3 != b3(content) {
		t.Fatalf("meta %+v", m)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	return b
}
