package stage_test

import (
	"context"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/stage"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/storetest"
	"github.com/zeebo/blake3"
)

// The stages' own rules (which record names an upload of which store, what verify says changed,
// the chunk a backend takes, an interrupted upload's code) run on the in-memory store: they do
// not depend on where uploads are kept. Every backend runs the stages end to end in the
// conformance suite (ops/store/storetest), and the local store its own cases (modes, links).

var bg = context.Background()

func hexOf(b []byte) string {
	s := blake3.Sum256(b)
	return hex.EncodeToString(s[:])
}

// memUpload uploads data from a source file through the stage and returns the record and the
// source's path.
func memUpload(t *testing.T, b store.Backend, name string, data []byte) (*manifest.Record, string) {
	t.Helper()
	src := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	u, err := stage.NewUploader(b, stage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &manifest.Record{Path: src, Name: name}
	if err := u.Upload(bg, rec, nil); err != nil {
		t.Fatal(err)
	}
	return rec, src
}

// memRemove removes the finished upload id as a sweep would.
func memRemove(t *testing.T, s *storetest.Mem, id string) {
	t.Helper()
	sw, err := s.Sweep(bg, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	if err := sw.Remove(bg, []store.Entry{{ID: id, Finished: true}}, func(store.Entry) bool { return true },
		func(_ store.Entry, o store.Outcome, err error) error {
			if o != store.Removed {
				t.Fatalf("removing %s: %v, %v", id, o, err)
			}
			return nil
		}); err != nil {
		t.Fatal(err)
	}
}

func wantCode(t *testing.T, err error, code fault.Code) {
	t.Helper()
	if got := fault.CodeOf(err); got != code {
		t.Fatalf("error %v (code %q), want code %q", err, got, code)
	}
}

func TestVerifyRecord(t *testing.T) {
	data := []byte("the bytes of a.txt\n")
	hash := hexOf(data)
	tests := []struct {
		name   string
		prep   func(t *testing.T, s *storetest.Mem, id, src string)
		code   fault.Code
		okFlag bool // verified.blake3 is the hash read from the upload
	}{
		{"intact", func(*testing.T, *storetest.Mem, string, string) {}, "", true},
		{"one byte flipped in the upload", func(t *testing.T, s *storetest.Mem, id, src string) {
			s.EditFile(id, []byte("the bytes of a.txt\r"))
		}, fault.VerifyMismatch, false},
		{"source changed", func(t *testing.T, s *storetest.Mem, id, src string) {
			os.WriteFile(src, []byte("the bytes of b.txt\n"), 0o600)
		}, fault.VerifyMismatch, true},
		{"upload gone", func(t *testing.T, s *storetest.Mem, id, src string) { memRemove(t, s, id) }, fault.UploadMissing, false},
		{"source gone", func(t *testing.T, s *storetest.Mem, id, src string) { os.Remove(src) }, fault.FileMissing, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := storetest.NewMem("mem://chat")
			rec, src := memUpload(t, s, "a.txt", data)
			if rec.Blake3 != hash {
				t.Fatalf("uploaded with BLAKE3 %s, want %s", rec.Blake3, hash)
			}
			tt.prep(t, s, rec.Upload.ID, src)
			err := stage.VerifyRecord(bg, s, rec, nil)
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

func TestVerifyID(t *testing.T) {
	data := []byte("upload bytes")
	tests := []struct {
		name string
		prep func(s *storetest.Mem, id string)
		code fault.Code
	}{
		{"intact", func(*storetest.Mem, string) {}, ""},
		{"intact and used", func(s *storetest.Mem, id string) { s.MarkUsed(bg, []string{id}, time.Now()) }, ""},
		{"flipped byte", func(s *storetest.Mem, id string) { s.EditFile(id, []byte("upload bytez")) }, fault.VerifyMismatch},
		{"truncated", func(s *storetest.Mem, id string) { s.EditFile(id, data[:3]) }, fault.VerifyMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := storetest.NewMem("mem://chat")
			up, _ := memUpload(t, s, "u.bin", data)
			id := up.Upload.ID
			tt.prep(s, id)
			rec, err := stage.VerifyID(bg, s, id, nil)
			wantCode(t, err, tt.code)
			if rec.Upload == nil || rec.Upload.ID != id || rec.Name != "u.bin" || rec.Size != int64(len(data)) || rec.Path != s.FinishedURI(id, "u.bin") {
				t.Fatalf("record %+v", rec)
			}
			if rec.Verified == nil || rec.Verified.OK != (tt.code == "") {
				t.Fatalf("verified %+v", rec.Verified)
			}
		})
	}
	s := storetest.NewMem("mem://chat")
	rec, err := stage.VerifyID(bg, s, "not-an-id", nil)
	wantCode(t, err, fault.UploadInvalid)
	if rec.Path != "mem://chat/not-an-id" {
		t.Fatalf("the record of an id that is none: %+v", rec)
	}
}

// A record names an upload of the store it was uploaded to: another store's record is
// upload.missing and says which store it belongs to.
func TestTouch(t *testing.T) {
	s := storetest.NewMem("mem://chat")
	up, _ := memUpload(t, s, "a.txt", []byte("a"))
	id := up.Upload.ID
	at := time.Now().Add(time.Minute).Truncate(time.Second)
	rec := &manifest.Record{Path: "a.txt", Upload: &manifest.Upload{ID: id, Store: "mem://chat/"}}
	wantCode(t, stage.Touch(bg, s, rec, at), "")
	if l, err := s.List(bg); err != nil || !l.Entries[0].LastUsed.Equal(at) {
		t.Fatalf("last used %+v, %v; want %v", l, err, at)
	}
	other := &manifest.Record{Path: "a.txt", Upload: &manifest.Upload{ID: id, Store: "mem://elsewhere"}}
	err := stage.Touch(bg, s, other, at)
	wantCode(t, err, fault.UploadMissing)
	if !strings.Contains(err.Error(), "belongs to store mem://elsewhere") {
		t.Fatalf("message does not name the other store: %v", err)
	}
	wantCode(t, stage.Touch(bg, s, &manifest.Record{Path: "x"}, at), fault.UploadMissing)
	wantCode(t, stage.Touch(bg, s, &manifest.Record{Path: "x", Upload: &manifest.Upload{ID: "../x"}}, at), fault.UploadInvalid)
}

// chunky is a store with chunk sizes of its own (store.Features' Chunk and LeastChunk).
type chunky struct{ *storetest.Mem }

func (c chunky) Features() store.Features {
	f := c.Mem.Features()
	f.Chunk, f.LeastChunk = 100, 10
	return f
}

// plain is a store with none of the optional interfaces: the stage's own Begin, Write, Finish.
type plain struct{ store.Backend }

func (plain) Features() store.Features { return store.Features{} }

// The chunk a backend takes, and the path an upload takes through a backend without a
// Streamer: chunk by chunk, and an interrupted one leaves nothing behind and says so.
func TestUploadChunks(t *testing.T) {
	s := storetest.NewMem("mem://chat")
	if _, err := stage.NewUploader(chunky{s}, stage.Options{Chunk: 9}); fault.CodeOf(err) != fault.UploadInvalid || !strings.Contains(err.Error(), "at least 10 bytes") {
		t.Fatalf("a chunk under the least: %v", err)
	}
	u, err := stage.NewUploader(chunky{s}, stage.Options{})
	if err != nil || stage.ChunkOf(u) != 100 {
		t.Fatalf("the backend's default chunk: %+v, %v", u, err)
	}
	if stage.ChunkLeast(chunky{s}) != 10 || stage.ChunkLeast(s) != 1 {
		t.Fatal("ChunkLeast")
	}
	data := []byte(strings.Repeat("0123456789", 100))
	src := filepath.Join(t.TempDir(), "d.bin")
	os.WriteFile(src, data, 0o600)
	var steps []int64
	cctx, cancel := context.WithCancel(bg)
	defer cancel()
	u, _ = stage.NewUploader(plain{s}, stage.Options{Chunk: 300, Progress: func(n int64) {
		if steps = append(steps, n); len(steps) == 2 {
			cancel()
		}
	}})
	rec := &manifest.Record{Path: src}
	err = u.Upload(cctx, rec, nil)
	wantCode(t, err, fault.UploadInterrupted)
	if !errors.Is(err, context.Canceled) || rec.Upload != nil {
		t.Fatalf("interrupted: %v, record %+v", err, rec.Upload)
	}
	if l, _ := s.List(bg); len(l.Entries) != 0 {
		t.Fatalf("the plain path left %+v behind", l.Entries)
	}
	steps = nil
	u, _ = stage.NewUploader(plain{s}, stage.Options{Chunk: 300, Progress: func(n int64) { steps = append(steps, n) }})
	if err := u.Upload(bg, rec, nil); err != nil {
		t.Fatal(err)
	}
	if len(steps) != 4 || steps[3] != 100 || rec.Blake3 != hexOf(data) || rec.Upload.Path != "" {
		t.Fatalf("steps %v, record %+v (upload %+v)", steps, rec, rec.Upload)
	}
}

// A folder record on a store that keeps no folder uploads is refused, saying what to do.
func TestUploadFolderNeedsTrees(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f"), []byte("f"), 0o600)
	u, _ := stage.NewUploader(plain{storetest.NewMem("mem://chat")}, stage.Options{})
	err := u.Upload(bg, &manifest.Record{Path: dir, Kind: manifest.KindFolder}, nil)
	wantCode(t, err, fault.UploadInvalid)
	if !strings.Contains(err.Error(), "--each") {
		t.Fatalf("the refusal does not say what to do: %v", err)
	}
}
