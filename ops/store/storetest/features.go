package storetest

import (
	"testing"

	"github.com/attachctl/attachctl/ops/store"
)

// testFeatures: the backend declares in Features every ability it has, and only those. Nothing
// above the seam asserts a backend's type, so an ability implemented and not declared is never
// used (a store that keeps folders refusing folder records), and one declared but not
// implemented would not compile; the two kept apart drift, which is what this catches. The
// Limiter is not the backend's own: it is the engine's store.Quota over the backend's mark
// (store.Marker), declared by every backend, and the limits tests use it through Features.
func testFeatures(t *testing.T, h Harness) {
	b := h.New(t)
	f := b.Features()
	for _, c := range []struct {
		name              string
		declared, ability bool
	}{
		{"Pather", f.Pather != nil, has[store.Pather](b)},
		{"Namer", f.Namer != nil, has[store.Namer](b)},
		{"Exister", f.Exister != nil, has[store.Exister](b)},
		{"Checker", f.Checker != nil, has[store.Checker](b)},
		{"Trees", f.Trees != nil, has[store.Trees](b)},
		{"Streamer", f.Streamer != nil, has[store.Streamer](b)},
		{"Batcher", f.Batcher != nil, has[store.Batcher](b)},
		{"Moder", f.Moder != nil, has[store.Moder](b)},
	} {
		if c.declared != c.ability {
			t.Errorf("%s: declared %v in Features, implemented %v", c.name, c.declared, c.ability)
		}
	}
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

// has reports whether b implements T.
func has[T any](b store.Backend) bool {
	_, ok := b.(T)
	return ok
}
