package mem_test

import (
	"context"
	"testing"

	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/internal/mem"
	"github.com/attachctl/attachctl/ops/store/storetest"
)

// The in-memory store passes the backend conformance suite.
func TestMemConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) store.Backend { return mem.New("mem://" + t.Name()) },
		NotStore: func(t *testing.T) store.Backend {
			s := mem.New("mem://" + t.Name())
			s.Plant("notes.txt")
			return s
		},
		Exists: func(t *testing.T, b store.Backend) bool {
			ok, err := b.(*mem.Store).Exists(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return ok
		},
		Chunks:   func(t *testing.T, b store.Backend) store.ChunkBackend { return b.(*mem.Store) },
		Reserver: func(t *testing.T, b store.Backend) store.Reserver { return b.(*mem.Store).Reserver() },
		RemoveFromUpload: func(t *testing.T, b store.Backend, id, rel string) {
			if err := b.(*mem.Store).RemoveFromUpload(id, rel); err != nil {
				t.Fatal(err)
			}
		},
		RemovePartialInfo: func(t *testing.T, b store.Backend, id string) {
			if err := b.(*mem.Store).RemovePartialInfo(id); err != nil {
				t.Fatal(err)
			}
		},
		PlantMarker: func(t *testing.T, b store.Backend, id string) { b.(*mem.Store).Plant(id + "/" + store.UsedName) },
		PlantForeignMarker: func(t *testing.T, b store.Backend, id string) {
			if err := b.(*mem.Store).PlantForeignMarker(id); err != nil {
				t.Fatal(err)
			}
		},
		EditTreeFile: func(t *testing.T, b store.Backend, id, name, rel string, data []byte) {
			if err := b.(*mem.Store).EditTreeFile(id, name, rel, data); err != nil {
				t.Fatal(err)
			}
		},
	})
}
