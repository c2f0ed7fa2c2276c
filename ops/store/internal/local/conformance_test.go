//go:build unix

package local

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/storetest"
)

// The local store passes the backend conformance suite.
func TestLocalConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) store.Backend {
			return newBackend(t, filepath.Join(t.TempDir(), "store"))
		},
		NotStore: func(t *testing.T) store.Backend {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
				t.Fatal(err)
			}
			return newBackend(t, dir)
		},
		Empty: func(t *testing.T) store.Backend { return newBackend(t, t.TempDir()) },
		Exists: func(t *testing.T, b store.Backend) bool {
			_, err := os.Lstat(b.Location())
			return err == nil
		},
		Chunks: func(t *testing.T, b store.Backend) store.ChunkBackend { return chunker{b.(*localStore), defaultChunk} },
		Reserver: func(t *testing.T, b store.Backend) store.Reserver {
			s := b.(*localStore)
			if err := s.open(true); err != nil {
				t.Fatal(err)
			}
			return reserver(s)
		},
		RemoveFromUpload: func(t *testing.T, b store.Backend, id, rel string) {
			if err := os.RemoveAll(filepath.Join(b.Location(), id, rel)); err != nil {
				t.Fatal(err)
			}
		},
		RemovePartialInfo: func(t *testing.T, b store.Backend, id string) {
			if err := os.Remove(filepath.Join(b.Location(), InternalDir, partialDir, id, partialInfo)); err != nil {
				t.Fatal(err)
			}
		},
		PlantMarker: func(t *testing.T, b store.Backend, id string) {
			dir := filepath.Join(b.Location(), id)
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, UsedName), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		PlantForeignMarker: func(t *testing.T, b store.Backend, id string) {
			marker := filepath.Join(b.Location(), id, UsedName)
			os.Remove(marker)
			if err := os.Symlink("elsewhere", marker); err != nil {
				t.Fatal(err)
			}
		},
		EditTreeFile: func(t *testing.T, b store.Backend, id, name, rel string, data []byte) {
			p := filepath.Join(b.Features().Pather.FinishedPath(id, name), filepath.FromSlash(rel))
			os.Chmod(filepath.Dir(p), 0o700)
			if data == nil {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				return
			}
			os.MkdirAll(filepath.Dir(p), 0o700)
			os.Chmod(p, 0o600)
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
		},
	})
}
