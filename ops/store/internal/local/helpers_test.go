//go:build unix

package local

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/zeebo/blake3"
)

// testStore is a new store in a test's temporary folder, named like a chat.
func testStore(t testing.TB) *localStore {
	t.Helper()
	s, err := openStore(filepath.Join(t.TempDir(), "chat-1"), true)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newBackend is New(dir), as every caller outside the package opens a local store.
func newBackend(t testing.TB, dir string, opts ...Option) store.Backend {
	t.Helper()
	b, err := New(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wantCode fails the test unless err carries code; code "" wants no error at all.
func wantCode(t *testing.T, err error, code fault.Code) {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if got := fault.CodeOf(err); got != code {
		t.Fatalf("error %v: code %q, want %q", err, got, code)
	}
}

// putFinished lays out a finished upload as the package doc says (0700/0600) and returns its id.
func putFinished(t testing.TB, s *localStore, name string, data []byte, made time.Time) string {
	t.Helper()
	id, err := store.NewID()
	if err != nil {
		t.Fatal(err)
	}
	dir := s.UploadDir(id)
	if err := os.Mkdir(dir, DirMode); err != nil {
		t.Fatal(err)
	}
	sum := blake3.Sum256(data)
	m := Meta{ID: id, Name: name, Size: int64(len(data)), Blake3: hex.EncodeToString(sum[:]), Made: made.UTC()}
	b, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, name), data, FileMode); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, MetaName), b, FileMode); err != nil {
		t.Fatal(err)
	}
	return id
}

// partialIDs lists the ids of unfinished uploads.
func (s *localStore) partialIDs() ([]string, error) { return s.PartialIDs() }

// finishLeftover finishes an empty upload named name and puts its partial back beside it, with
// the info it had: what a finish killed after its publish, before it removed the partial, left.
func finishLeftover(t *testing.T, s *localStore, name string) string {
	t.Helper()
	id, err := s.Begin(context.Background(), name, -1)
	must(t, err)
	info, err := os.ReadFile(filepath.Join(s.partialDir(id), partialInfo))
	must(t, err)
	_, err = s.Finish(context.Background(), id, 0, "")
	must(t, err)
	must(t, os.Mkdir(s.partialDir(id), 0o700))
	must(t, os.WriteFile(filepath.Join(s.partialDir(id), partialInfo), info, 0o600))
	return id
}
