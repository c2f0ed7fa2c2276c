//go:build unix

package local

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/zeebo/blake3"
)

// TestVerifyRecord: verify of a record over the local store, with what only the local store can
// break (modes, links). The stage's own cases (the source changed or gone, another store's
// record) are ops/stage's tests, on the in-memory store.
func TestVerifyRecord(t *testing.T) {
	data := []byte("the bytes of a.txt\n")
	sum := blake3.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	tests := []struct {
		name   string
		prep   func(t *testing.T, s *localStore, id, src string)
		code   fault.Code
		okFlag bool // verified.ok when verified is set
	}{
		{"intact", func(*testing.T, *localStore, string, string) {}, "", true},
		{"one byte flipped in the upload", func(t *testing.T, s *localStore, id, src string) {
			flip(t, s.FinishedPath(id, "a.txt"), 3)
		}, fault.VerifyMismatch, false},
		{"upload gone", func(t *testing.T, s *localStore, id, src string) { os.RemoveAll(s.UploadDir(id)) }, fault.UploadMissing, false},
		{"upload readable by others", func(t *testing.T, s *localStore, id, src string) {
			os.Chmod(s.FinishedPath(id, "a.txt"), 0o644)
		}, fault.UploadUnreadable, false},
		{"upload has a second hard link", func(t *testing.T, s *localStore, id, src string) {
			os.Link(s.FinishedPath(id, "a.txt"), filepath.Join(t.TempDir(), "x"))
		}, fault.UploadUnreadable, false},
		{"upload is a symlink", func(t *testing.T, s *localStore, id, src string) {
			p := s.FinishedPath(id, "a.txt")
			os.Remove(p)
			os.Symlink(src, p)
		}, fault.UploadUnreadable, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testStore(t)
			src := filepath.Join(t.TempDir(), "a.txt")
			os.WriteFile(src, data, 0o644)
			id := putFinished(t, s, "a.txt", data, time.Now())
			rec := &manifest.Record{Path: src, Name: "a.txt", Blake3: hash,
				Upload: &manifest.Upload{ID: id, Store: s.Dir, Path: s.FinishedPath(id, "a.txt")}}
			tt.prep(t, s, id, src)
			err := s.VerifyRecord(rec, nil)
			wantCode(t, err, tt.code)
			if tt.code == "" || tt.code == fault.VerifyMismatch {
				if rec.Verified == nil || rec.Verified.OK != (tt.code == "") {
					t.Fatalf("verified = %+v", rec.Verified)
				}
				if _, err := time.Parse(time.RFC3339, rec.Verified.At); err != nil {
					t.Fatalf("at: %v", err)
				}
				if tt.okFlag && rec.Verified.Blake3 != hash {
					t.Fatalf("verified.blake3 %s, want what was read %s", rec.Verified.Blake3, hash)
				}
			}
		})
	}
}

// flip inverts the bits of one byte of the file at path.
func flip(t testing.TB, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyUpload(t *testing.T) {
	data := []byte("upload bytes")
	outside := t.TempDir()
	tests := []struct {
		name string
		prep func(s *localStore, id string)
		code fault.Code
	}{
		{"intact", func(*localStore, string) {}, ""},
		{"intact and used", func(s *localStore, id string) { s.MarkUsed(context.Background(), []string{id}, time.Now()) }, ""},
		{"flipped byte", func(s *localStore, id string) { flip(t, s.FinishedPath(id, "u.bin"), 5) }, fault.VerifyMismatch},
		{"truncated", func(s *localStore, id string) { os.Truncate(s.FinishedPath(id, "u.bin"), 3) }, fault.VerifyMismatch},
		{"folder mode 0755", func(s *localStore, id string) { os.Chmod(s.UploadDir(id), 0o755) }, fault.UploadUnreadable},
		{"metadata mode 0644", func(s *localStore, id string) { os.Chmod(filepath.Join(s.UploadDir(id), MetaName), 0o644) }, fault.UploadUnreadable},
		{"symlink inside", func(s *localStore, id string) { os.Symlink(outside, filepath.Join(s.UploadDir(id), "evil")) }, fault.UploadUnreadable},
		{"marker is a symlink", func(s *localStore, id string) { os.Symlink(outside, filepath.Join(s.UploadDir(id), UsedName)) }, fault.UploadUnreadable},
		{"extra file", func(s *localStore, id string) { os.WriteFile(filepath.Join(s.UploadDir(id), "x"), nil, FileMode) }, fault.UploadUnreadable},
		{"file hard-linked", func(s *localStore, id string) {
			os.Link(s.FinishedPath(id, "u.bin"), filepath.Join(s.Dir, "stray"))
		}, fault.UploadUnreadable},
		{"folder is a symlink", func(s *localStore, id string) {
			os.Rename(s.UploadDir(id), filepath.Join(outside, id))
			os.Symlink(filepath.Join(outside, id), s.UploadDir(id))
		}, fault.UploadUnreadable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testStore(t)
			id := putFinished(t, s, "u.bin", data, time.Now())
			tt.prep(s, id)
			rec, err := s.VerifyUpload(id, nil)
			wantCode(t, err, tt.code)
			if tt.code == "" && (rec.Verified == nil || !rec.Verified.OK || rec.Upload.ID != id || rec.Name != "u.bin" || rec.Size != int64(len(data))) {
				t.Fatalf("record %+v verified %+v", rec, rec.Verified)
			}
		})
	}
}

// TestVerifyFindsOneFlippedByteIn1GiB writes a 1 GiB upload (mostly a hole, with random blocks
// spread over it), records its hash, flips one byte at a random offset and expects a mismatch.
func TestVerifyFindsOneFlippedByteIn1GiB(t *testing.T) {
	const size = 1 << 30
	s := testStore(t)
	id, _ := store.NewID()
	os.Mkdir(s.UploadDir(id), DirMode)
	path := s.FinishedPath(id, "big.bin")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_EXCL, FileMode)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	block := make([]byte, 64<<10)
	for off := int64(0); off < size; off += 16 << 20 { // a random block every 16 MiB
		rng.Read(block)
		f.WriteAt(block, off)
	}
	f.Truncate(size)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	sum, n, err := ops.Hash(f, nil)
	f.Close()
	if err != nil || n != size {
		t.Fatal(n, err)
	}
	writeMeta(t, s, Meta{ID: id, Name: "big.bin", Size: size, Blake3: sum, Made: time.Now().UTC()})
	if _, err := s.VerifyUpload(id, nil); err != nil {
		t.Fatalf("intact 1 GiB upload: %v", err)
	}
	off := rng.Int63n(size)
	flip(t, path, off)
	var read int64
	rec, err := s.VerifyUpload(id, func(k int64) { read += k })
	wantCode(t, err, fault.VerifyMismatch)
	if rec.Verified == nil || rec.Verified.OK || rec.Verified.Blake3 == sum || read != size {
		t.Fatalf("flipped byte at %d not found: verified %+v, %d bytes read", off, rec.Verified, read)
	}
}

func writeMeta(t testing.TB, s *localStore, m Meta) {
	t.Helper()
	b, _ := jsonMarshal(m)
	if err := os.WriteFile(filepath.Join(s.UploadDir(m.ID), MetaName), b, FileMode); err != nil {
		t.Fatal(err)
	}
}

// benchSize is the file the verify benchmarks hash: large enough to leave the CPU caches.
const benchSize = 256 << 20

// BenchmarkVerifyUpload is verify of one upload read from the page cache, on one goroutine: the
// rate to compare with BenchmarkBlake3InMemory (the same bytes hashed from memory).
func BenchmarkVerifyUpload(b *testing.B) {
	s := testStore(b)
	data := make([]byte, benchSize)
	rand.New(rand.NewSource(1)).Read(data)
	id := putFinished(b, s, "bench.bin", data, time.Now())
	if _, err := s.VerifyUpload(id, nil); err != nil { // warm the page cache
		b.Fatal(err)
	}
	b.SetBytes(benchSize)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.VerifyUpload(id, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBlake3InMemory is zeebo/blake3 over the same number of bytes held in memory.
func BenchmarkBlake3InMemory(b *testing.B) {
	data := make([]byte, benchSize)
	rand.New(rand.NewSource(1)).Read(data)
	b.SetBytes(benchSize)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		blake3.Sum256(data)
	}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

// TestFolderModeOneWording: a folder the store refuses for its mode is named in the same words
// wherever it is met: an internal folder as it is opened, an upload's folder as verify checks it.
func TestFolderModeOneWording(t *testing.T) {
	s := testStore(t)
	id := putFinished(t, s, "u.bin", []byte("x"), time.Now())
	must(t, os.Chmod(s.UploadDir(id), 0o755))
	_, err := s.VerifyUpload(id, nil)
	want := "folder mode 0755, not 0700"
	if !strings.Contains(fmt.Sprint(err), s.UploadDir(id)+": "+want) {
		t.Fatalf("verify of an upload's folder of mode 0755: %v, want %q", err, want)
	}
	must(t, os.Chmod(filepath.Join(s.Dir, InternalDir), 0o755))
	_, err = s.Begin(context.Background(), "b.txt", 1)
	if !strings.Contains(fmt.Sprint(err), filepath.Join(s.Dir, InternalDir)+": "+want) {
		t.Fatalf("an internal folder of mode 0755: %v, want %q", err, want)
	}
}

// A small upload of a batch whose metadata two files of STORE/.attachctl/meta name is damaged
// (upload.unreadable) to every reader of it, the folder engine's too: its metadata, its check,
// and whether it is a folder upload. With its file whole it is a file upload; with none naming
// it, not a finished upload.
func TestSmallUploadMetaTwice(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	recs := commitSmall(t, s, 2, 7)
	id := recs[0].Upload.ID
	reads := func(fresh *localStore) map[string]error {
		_, ierr := fresh.Info(ctx, id)
		_, folder, ferr := fresh.FolderFiles(ctx, id)
		if ferr == nil && folder {
			ferr = fmt.Errorf("a folder upload")
		}
		_, terr := fresh.TreeInfo(ctx, id)
		return map[string]error{"Info": ierr, "Check": fresh.Check(ctx, id), "FolderFiles": ferr, "TreeInfo": terr}
	}
	fresh, err := openStore(s.Dir, false)
	must(t, err)
	for name, err := range reads(fresh) {
		if want := map[bool]fault.Code{true: fault.UploadInvalid}[name == "TreeInfo"]; fault.CodeOf(err) != want {
			t.Errorf("%s of a whole small upload: %v", name, err)
		}
	}
	files := metaFiles(t, s)
	b := mustRead(t, files[0])
	must(t, os.WriteFile(filepath.Join(filepath.Dir(files[0]), store.MetaFileName(store.MetaFileBatch(filepath.Base(files[0])), 99)), b, 0o400))
	fresh, err = openStore(s.Dir, false)
	must(t, err)
	for name, err := range reads(fresh) {
		if fault.CodeOf(err) != fault.UploadUnreadable {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, f := range metaFiles(t, s) {
		must(t, os.Remove(f))
	}
	fresh, err = openStore(s.Dir, false)
	must(t, err)
	for name, err := range reads(fresh) {
		if fault.CodeOf(err) != fault.UploadMissing {
			t.Errorf("%s of a small upload no file names: %v", name, err)
		}
	}
}
