package storetest

import (
	"testing"

	"github.com/attachctl/attachctl/ops/store"
)

// testFeatures: the backend declares in Features every ability it has, and only those. Nothing
// above the seam asserts a backend's type, so an ability implemented and not declared is never
// used (a store that keeps folders refusing folder records), and one declared but not
// implemented would not compile; the two kept apart drift, which is what this catches.
func testFeatures(t *testing.T, h Harness) {
	b := h.New(t)
	f := b.Features()
	has := func(name string, declared, implemented bool) {
		t.Helper()
		if declared != implemented {
			t.Errorf("%s: declared %v in Features, implemented %v", name, declared, implemented)
		}
	}
	_, ok := b.(store.Pather)
	has("Pather", f.Pather != nil, ok)
	_, ok = b.(store.Namer)
	has("Namer", f.Namer != nil, ok)
	_, ok = b.(store.Exister)
	has("Exister", f.Exister != nil, ok)
	_, ok = b.(store.Limiter)
	has("Limiter", f.Limiter != nil, ok)
	_, ok = b.(store.Checker)
	has("Checker", f.Checker != nil, ok)
	_, ok = b.(store.Trees)
	has("Trees", f.Trees != nil, ok)
	_, ok = b.(store.Streamer)
	has("Streamer", f.Streamer != nil, ok)
	_, ok = b.(store.Batcher)
	has("Batcher", f.Batcher != nil, ok)
	if f.Pather != nil && f.Namer != nil {
		t.Error("Features has both a Pather and a Namer: records would name an upload two ways")
	}
	if f.Chunk < 0 || f.LeastChunk < 0 || (f.Chunk > 0 && f.Chunk < f.LeastChunk) {
		t.Errorf("Features' chunks: %d by default, at least %d", f.Chunk, f.LeastChunk)
	}
	// What Features declares is the backend itself: a use through it acts on this store.
	if f.Pather != nil && f.Pather.FinishedPath("x", "y") == "" {
		t.Error("the declared Pather names no path")
	}
}
