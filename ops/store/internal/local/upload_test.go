//go:build unix

package local

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/zeebo/blake3"
	"golang.org/x/sys/unix"
)

func b3(b []byte) string { s := blake3.Sum256(b); return hex.EncodeToString(s[:]) }

func dataSize(t *testing.T, s *localStore, id string) int64 {
	t.Helper()
	st, err := s.Status(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return st.Offset
}

// onlyReader hides a reader's other methods, so Chunk cannot learn its length up front.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(b []byte) (int, error) { return o.r.Read(b) }

func TestStepByStep(t *testing.T) {
	old := unix.Umask(0)
	defer unix.Umask(old)
	s := newStore(t)
	content := []byte("0123456789")
	id, err := s.Begin(context.Background(), "ten.txt", 10)
	must(t, err)
	must(t, store.ValidID(id))
	if off, err := s.Chunk(id, 0, bytes.NewReader(content[:4]), 0); err != nil || off != 4 {
		t.Fatalf("chunk: %d %v", off, err)
	}
	off, err := s.Chunk(id, 2, bytes.NewReader(content[4:]), 0)
	wantCode(t, err, fault.UploadOffset)
	if off != 4 || !strings.Contains(err.Error(), "current offset 4") {
		t.Fatalf("offset error: %d %v", off, err)
	}
	// Crossing the declared size: from a file (known length), a buffer, and a stream read in pieces.
	f := filepath.Join(t.TempDir(), "seven")
	must(t, os.WriteFile(f, []byte("4567890"), 0o600))
	fh, err := os.Open(f)
	must(t, err)
	defer fh.Close()
	for _, r := range []io.Reader{fh, bytes.NewReader([]byte("4567890")), onlyReader{strings.NewReader("4567890")}} {
		off, err = s.Chunk(id, 4, r, 2)
		wantCode(t, err, fault.UploadPastSize)
		if off != 4 || dataSize(t, s, id) != 4 {
			t.Fatalf("past size kept bytes: offset %d, data %d", off, dataSize(t, s, id))
		}
	}
	st, err := s.Status(context.Background(), id)
	must(t, err)
	if *st != (Status{ID: id, Name: "ten.txt", Offset: 4, Size: 10}) {
		t.Fatalf("status %+v", st)
	}
	_, err = s.Finish(context.Background(), id, -1, "")
	wantCode(t, err, fault.UploadSizeMismatch)
	if off, err := s.Chunk(id, 4, onlyReader{bytes.NewReader(content[4:])}, 3); err != nil || off != 10 {
		t.Fatalf("chunk: %d %v", off, err)
	}
	_, err = s.Finish(context.Background(), id, 11, "")
	wantCode(t, err, fault.UploadSizeMismatch)
	_, err = s.Finish(context.Background(), id, -1, b3([]byte("something else")))
	wantCode(t, err, fault.UploadHashMismatch)
	_, err = s.Finish(context.Background(), id, -1, "abc")
	wantCode(t, err, fault.UploadInvalid)
	if dataSize(t, s, id) != 10 {
		t.Fatal("a refused finish lost the partial")
	}
	m, err := s.Finish(context.Background(), id, 10, strings.ToUpper(b3(content)))
	must(t, err)
	if m.ID != id || m.Name != "ten.txt" || m.Size != 10 || m.Blake3 != b3(content) {
		t.Fatalf("meta %+v", m)
	}
	got, err := os.ReadFile(s.FinishedPath(id, "ten.txt"))
	must(t, err)
	if !bytes.Equal(got, content) {
		t.Fatalf("finished %q", got)
	}
	checkModes(t, s.Dir)
	st, err = s.Status(context.Background(), id)
	must(t, err)
	if !st.Finished || st.Offset != 10 {
		t.Fatalf("status %+v", st)
	}
	if m2, err := s.Finish(context.Background(), id, 10, b3(content)); err != nil || m2.ID != id {
		t.Fatalf("finish again: %v", err)
	}
	_, err = s.Finish(context.Background(), id, 9, "")
	wantCode(t, err, fault.UploadSizeMismatch)
	_, err = s.Chunk(id, 10, strings.NewReader("x"), 0)
	wantCode(t, err, fault.UploadOffset)
	wantCode(t, s.Abort(context.Background(), id), fault.UploadInvalid)
	if _, err := os.Stat(s.FinishedPath(id, "ten.txt")); err != nil {
		t.Fatal("abort removed a finished upload")
	}

	// An open size, fixed at finish.
	id2, err := s.Begin(context.Background(), "open.bin", -1)
	must(t, err)
	_, err = s.Chunk(id2, 0, strings.NewReader("abc"), 0)
	must(t, err)
	_, err = s.Finish(context.Background(), id2, 4, "")
	wantCode(t, err, fault.UploadSizeMismatch)
	m, err = s.Finish(context.Background(), id2, 3, "")
	must(t, err)
	if m.Size != 3 || m.Blake3 != b3([]byte("abc")) {
		t.Fatalf("meta %+v", m)
	}

	// Abort.
	id3, err := s.Begin(context.Background(), "gone.bin", -1)
	must(t, err)
	must(t, s.Abort(context.Background(), id3))
	_, err = s.Status(context.Background(), id3)
	wantCode(t, err, fault.UploadMissing)
	wantCode(t, s.Abort(context.Background(), id3), fault.UploadMissing)
	_, err = s.Chunk(id3, 0, strings.NewReader("x"), 0)
	wantCode(t, err, fault.UploadMissing)

	// Bad ids and names.
	_, err = s.Status(context.Background(), "not-an-id")
	wantCode(t, err, fault.UploadInvalid)
	for _, n := range []string{"", ".", "..", "a/b", ".upload.json", strings.Repeat("x", 256)} {
		_, err = s.Begin(context.Background(), n, 1)
		wantCode(t, err, fault.UploadInvalid)
	}
	_, err = s.Begin(context.Background(), "x", -2)
	wantCode(t, err, fault.UploadInvalid)
	if ids, _ := s.partialIDs(); len(ids) != 0 {
		t.Fatalf("partials left: %v", ids)
	}
}

// checkModes walks dir: every folder 0700, a finished upload's bytes and metadata 0400, every
// other file 0600.
func checkModes(t *testing.T, dir string) {
	t.Helper()
	filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		must(t, err)
		want := FileMode
		switch up := filepath.Base(filepath.Dir(path)); {
		case fi.IsDir():
			want = DirMode
		case store.ValidID(up) == nil && filepath.Base(filepath.Dir(filepath.Dir(path))) != partialDir && fi.Name() != UsedName:
			want = ReadOnlyMode
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %04o, want %04o", path, fi.Mode().Perm(), want)
		}
		return nil
	})
}

// TestFinishCrash: a finish that died before or after its rename is completed by the next call.
func TestFinishCrash(t *testing.T) {
	s := newStore(t)
	content := []byte("crash me")
	// Died between moving data into out/ and renaming out/ to STORE/<id>.
	id, err := s.Begin(context.Background(), "c.txt", int64(len(content)))
	must(t, err)
	_, err = s.Chunk(id, 0, bytes.NewReader(content), 0)
	must(t, err)
	dir := s.partialDir(id)
	must(t, os.Mkdir(filepath.Join(dir, partialOut), 0o700))
	must(t, os.WriteFile(filepath.Join(dir, partialOut, MetaName), []byte("{}"), 0o600))
	must(t, os.Rename(filepath.Join(dir, partialData), filepath.Join(dir, partialOut, "c.txt")))
	st, err := s.Status(context.Background(), id)
	must(t, err)
	if st.Finished || st.Offset != int64(len(content)) {
		t.Fatalf("status %+v", st)
	}
	if _, err := os.Stat(s.UploadDir(id)); !os.IsNotExist(err) {
		t.Fatal("a half finish is visible")
	}
	m, err := s.Finish(context.Background(), id, -1, b3(content))
	must(t, err)
	if m.Size != int64(len(content)) {
		t.Fatalf("meta %+v", m)
	}
	// Died after the rename, before the partial was removed.
	id2 := finishLeftover(t, s, "d.txt")
	st, err = s.Status(context.Background(), id2)
	must(t, err)
	if !st.Finished {
		t.Fatalf("status %+v", st)
	}
	if _, err := s.Finish(context.Background(), id2, 0, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.partialDir(id2)); !os.IsNotExist(err) {
		t.Fatal("the leftover partial was not cleaned")
	}
}

func writeRandom(t *testing.T, path string, n int, seed uint64) []byte {
	t.Helper()
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)})
	r.Read(b)
	must(t, os.WriteFile(path, b, 0o644))
	return b
}

func recordFor(path string, content []byte) *manifest.Record {
	r := &manifest.Record{Path: path, Name: filepath.Base(path), Blake3: b3(content)}
	r.SetSize(int64(len(content)))
	return r
}

func TestUploadRecordAndDedupe(t *testing.T) {
	old := unix.Umask(0o022)
	defer unix.Umask(old)
	s := newStore(t)
	dir := t.TempDir()
	content := writeRandom(t, filepath.Join(dir, "a.bin"), 3<<20+17, 1)
	rec := recordFor(filepath.Join(dir, "a.bin"), content)
	var seen int64
	must(t, s.UploadRecord(context.Background(), rec, UploadOptions{Chunk: 1 << 16, Progress: func(n int64) { seen += n }}))
	if seen != int64(len(content)) {
		t.Fatalf("progress %d of %d", seen, len(content))
	}
	if rec.Upload == nil || rec.Upload.Store != s.Dir || rec.Upload.Path != s.FinishedPath(rec.Upload.ID, "a.bin") {
		t.Fatalf("upload %+v", rec.Upload)
	}
	f, err := s.openUploadFile(rec.Upload.ID, "a.bin")
	must(t, err)
	got, _ := io.ReadAll(f)
	f.Close()
	if !bytes.Equal(got, content) {
		t.Fatal("finished bytes differ")
	}
	checkModes(t, s.Dir)

	// The same content and name again, from another Store value: not uploaded again.
	s2, err := openStore(s.Dir, false)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "copy"), content, 0o600))
	must(t, os.Mkdir(filepath.Join(dir, "b"), 0o700))
	must(t, os.WriteFile(filepath.Join(dir, "b", "a.bin"), content, 0o600))
	rec2 := recordFor(filepath.Join(dir, "b", "a.bin"), content)
	must(t, s2.UploadRecord(context.Background(), rec2, UploadOptions{}))
	if rec2.Upload.ID != rec.Upload.ID {
		t.Fatalf("dedupe: %s, want %s", rec2.Upload.ID, rec.Upload.ID)
	}
	// Another name: a new upload.
	rec3 := recordFor(filepath.Join(dir, "copy"), content)
	must(t, s2.UploadRecord(context.Background(), rec3, UploadOptions{}))
	if rec3.Upload.ID == rec.Upload.ID {
		t.Fatal("a different name reused the id")
	}
	// No hash in the record (sniff --no-hash): computed, set, and deduped after the pass.
	rec4 := &manifest.Record{Path: filepath.Join(dir, "b", "a.bin")}
	must(t, s2.UploadRecord(context.Background(), rec4, UploadOptions{}))
	if rec4.Blake3 != b3(content) || rec4.Upload.ID != rec.Upload.ID || rec4.Size != int64(len(content)) {
		t.Fatalf("no-hash record: %+v %+v", rec4, rec4.Upload)
	}
	// A manifest that does not match the file.
	rec5 := recordFor(filepath.Join(dir, "copy"), []byte("other"))
	rec5.SetSize(int64(len(content)))
	wantCode(t, s2.UploadRecord(context.Background(), rec5, UploadOptions{}), fault.UploadHashMismatch)
	// Missing source, a FIFO.
	wantCode(t, s2.UploadRecord(context.Background(), &manifest.Record{Path: filepath.Join(dir, "nope")}, UploadOptions{}), fault.FileMissing)
	must(t, unix.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	wantCode(t, s2.UploadRecord(context.Background(), &manifest.Record{Path: filepath.Join(dir, "fifo")}, UploadOptions{}), fault.FileNotRegular)
	ids, err := s.IDs()
	must(t, err)
	if len(ids) != 2 {
		t.Fatalf("finished uploads %v, want 2", ids)
	}
	// An empty file.
	must(t, os.WriteFile(filepath.Join(dir, "empty"), nil, 0o600))
	rec6 := recordFor(filepath.Join(dir, "empty"), nil)
	must(t, s.UploadRecord(context.Background(), rec6, UploadOptions{}))
	if fi, err := os.Stat(rec6.Upload.Path); err != nil || fi.Size() != 0 {
		t.Fatalf("empty upload: %v", err)
	}
}

// wchar is how many bytes this process has passed to write(2) so far.
func wchar(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skip("no /proc/self/io to count written bytes")
	}
	for _, l := range strings.Split(string(b), "\n") {
		var n int64
		if _, err := fmt.Sscanf(l, "wchar: %d", &n); err == nil {
			return n
		}
	}
	t.Skip("no wchar in /proc/self/io")
	return 0
}

// interrupted uploads rec with a context cancelled once stop bytes went through.
func interrupted(t *testing.T, s *localStore, rec *manifest.Record, stop int64) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seen int64
	err := s.UploadRecord(ctx, rec, UploadOptions{Chunk: 1 << 16, Progress: func(n int64) {
		if seen += n; seen >= stop {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted upload: %v", err)
	}
}

func onlyPartial(t *testing.T, s *localStore) string {
	t.Helper()
	ids, err := s.partialIDs()
	must(t, err)
	if len(ids) != 1 {
		t.Fatalf("partials %v, want one", ids)
	}
	return ids[0]
}

func TestResume(t *testing.T) {
	s := newStore(t)
	path := filepath.Join(t.TempDir(), "big.bin")
	content := writeRandom(t, path, 8<<20, 2)
	interrupted(t, s, recordFor(path, content), 5<<20)
	id := onlyPartial(t, s)
	off := dataSize(t, s, id)
	if off < 5<<20 || off >= 8<<20 {
		t.Fatalf("offset %d after the interruption", off)
	}
	before := wchar(t)
	rec := recordFor(path, content)
	must(t, s.UploadRecord(context.Background(), rec, UploadOptions{Chunk: 1 << 16}))
	written := wchar(t) - before
	if rec.Upload.ID != id {
		t.Fatalf("resumed as %s, want the first run's %s", rec.Upload.ID, id)
	}
	if rest := int64(len(content)) - off; written < rest || written > rest+64<<10 {
		t.Fatalf("resume wrote %d bytes; %d were missing", written, rest)
	}
	got, err := os.ReadFile(rec.Upload.Path)
	must(t, err)
	if !bytes.Equal(got, content) {
		t.Fatal("resumed upload differs from the source")
	}
	if ids, _ := s.partialIDs(); len(ids) != 0 {
		t.Fatalf("partials left: %v", ids)
	}
}

// TestSourceChangedResume: the source changes between the interruption and the resume; the result
// is the new content whole, under the same id, with and without a hash in the record.
func TestSourceChangedResume(t *testing.T) {
	for _, noHash := range []bool{false, true} {
		for _, where := range []int{100, 6 << 20} { // inside the durable prefix, past it
			s := newStore(t)
			path := filepath.Join(t.TempDir(), "big.bin")
			content := writeRandom(t, path, 8<<20, 3)
			interrupted(t, s, recordFor(path, content), 3<<20)
			id := onlyPartial(t, s)
			content[where] ^= 0xff
			must(t, os.WriteFile(path, content, 0o644))
			rec := recordFor(path, content)
			if noHash {
				rec.Blake3 = ""
			}
			must(t, s.UploadRecord(context.Background(), rec, UploadOptions{Chunk: 1 << 16}))
			if rec.Upload.ID != id || rec.Blake3 != b3(content) {
				t.Fatalf("noHash=%v where=%d: id %s (first %s), blake3 %s", noHash, where, rec.Upload.ID, id, rec.Blake3)
			}
			got, err := os.ReadFile(rec.Upload.Path)
			must(t, err)
			if !bytes.Equal(got, content) {
				t.Fatalf("noHash=%v where=%d: the upload mixes old and new content", noHash, where)
			}
		}
	}
	// A stale manifest (old hash) over a changed file: hashMismatch, nothing published.
	s := newStore(t)
	path := filepath.Join(t.TempDir(), "f.bin")
	content := writeRandom(t, path, 1<<20, 4)
	rec := recordFor(path, content)
	content[0] ^= 1
	must(t, os.WriteFile(path, content, 0o644))
	wantCode(t, s.UploadRecord(context.Background(), rec, UploadOptions{}), fault.UploadHashMismatch)
	if ids, _ := s.IDs(); len(ids) != 0 {
		t.Fatalf("published %v", ids)
	}
	// Run again with a fresh record: resumes the partial, which already holds the new bytes.
	before := wchar(t)
	rec = recordFor(path, content)
	must(t, s.UploadRecord(context.Background(), rec, UploadOptions{}))
	if w := wchar(t) - before; w > 64<<10 {
		t.Fatalf("wrote %d bytes again", w)
	}
}

// TestPartialHeld: a partial another process holds is left alone; a new one is made.
func TestPartialHeld(t *testing.T) {
	s := newStore(t)
	path := filepath.Join(t.TempDir(), "big.bin")
	content := writeRandom(t, path, 2<<20, 5)
	interrupted(t, s, recordFor(path, content), 1<<20)
	id := onlyPartial(t, s)
	p, err := s.lockPartial(id, true)
	must(t, err)
	off, _ := p.size()
	rec := recordFor(path, content)
	must(t, s.UploadRecord(context.Background(), rec, UploadOptions{}))
	if rec.Upload.ID == id {
		t.Fatal("used a partial another holder had locked")
	}
	if now, _ := p.size(); now != off {
		t.Fatalf("held partial changed: %d -> %d", off, now)
	}
	p.close()
	// The held partial is still there, and a later run dedupes against the finished one.
	rec = recordFor(path, content)
	must(t, s.UploadRecord(context.Background(), rec, UploadOptions{}))
	if ids, _ := s.IDs(); len(ids) != 1 {
		t.Fatalf("finished %v", ids)
	}
	wantCode(t, s.Abort(context.Background(), id), "")
}

// TestPartialStatusOutLink: between a finish's two renames Status reads out/<name>, and only
// through out as a real folder: an out that is a symlink to a folder elsewhere holding a file of
// that name is not followed (the partial has no data: missing), as the lock's open refuses it.
func TestPartialStatusOutLink(t *testing.T) {
	s := newStore(t)
	content := []byte("not in the store")
	id, err := s.Begin(context.Background(), "c.txt", int64(len(content)))
	must(t, err)
	_, err = s.Chunk(id, 0, bytes.NewReader(content), 0)
	must(t, err)
	elsewhere := t.TempDir()
	dir := s.partialDir(id)
	must(t, os.Rename(filepath.Join(dir, partialData), filepath.Join(elsewhere, "c.txt")))
	must(t, os.Symlink(elsewhere, filepath.Join(dir, partialOut)))
	u, _, err := s.PartialStatus(context.Background(), id)
	if fault.CodeOf(err) != fault.UploadMissing {
		t.Fatalf("status through a linked out/: %+v, %v; want upload.missing", u, err)
	}
}

// TestPartialStatusFIFO: Status reads the partial as the listing does, opening its data file; a
// FIFO planted as data is refused as not a regular file, and the open does not block on it.
func TestPartialStatusFIFO(t *testing.T) {
	s := newStore(t)
	id, err := s.Begin(context.Background(), "c.txt", 4)
	must(t, err)
	data := filepath.Join(s.partialDir(id), partialData)
	must(t, os.Remove(data))
	must(t, unix.Mkfifo(data, 0o600))
	done := make(chan error, 1)
	go func() { _, err := s.Status(context.Background(), id); done <- err }()
	select {
	case err := <-done:
		wantCode(t, err, fault.UploadUnreadable)
	case <-time.After(10 * time.Second):
		t.Fatal("Status blocked on a FIFO planted as the partial's data")
	}
}

// TestPartialWithoutInfo: the lock of a partial takes what is not there, its info.json or its
// data, as upload.missing (a partial just begun, or one on its way out), and an info.json it
// cannot read, or whose name or size `upload begin` would refuse, as upload.unreadable.
func TestPartialWithoutInfo(t *testing.T) {
	s := newStore(t)
	for _, tc := range []struct {
		what string
		edit func(dir string) error
		code fault.Code
	}{
		{"no info.json", func(dir string) error { return os.Remove(filepath.Join(dir, partialInfo)) }, fault.UploadMissing},
		{"no data", func(dir string) error { return os.Remove(filepath.Join(dir, partialData)) }, fault.UploadMissing},
		{"a damaged info.json", func(dir string) error { return os.WriteFile(filepath.Join(dir, partialInfo), []byte("{"), 0o600) }, fault.UploadUnreadable},
		{"an info.json naming no file", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, partialInfo), []byte(`{"name":"a/b","size":4}`), 0o600)
		}, fault.UploadUnreadable},
		{"an info.json with no size", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, partialInfo), []byte(`{"name":"c.txt","size":-2}`), 0o600)
		}, fault.UploadUnreadable},
	} {
		id, err := s.Begin(context.Background(), "c.txt", 4)
		must(t, err)
		must(t, tc.edit(s.partialDir(id)))
		_, err = s.Chunk(id, 0, strings.NewReader("abcd"), 0)
		if fault.CodeOf(err) != tc.code {
			t.Errorf("%s: chunk: %v, want %s", tc.what, err, tc.code)
		}
	}
}
