//go:build unix

package local

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestBatchSettleWaitsForMore: while More says more uploads are on their way, Settle of a built
// upload waits and the uploads built meanwhile go in the same commit; when More turns false
// (Wake), it commits them all at once.
func TestBatchSettleWaitsForMore(t *testing.T) {
	s := newStore(t)
	recs, _ := batchFiles(t, 5)
	b := s.newBatch()
	var more atomic.Bool
	more.Store(true)
	b.SetMore(more.Load)
	buildAll(t, b, recs[:1], 0)
	settled := make(chan error, 1)
	go func() { settled <- b.Settle(recs[0].Upload.ID) }()
	buildAll(t, b, recs[1:], 0)
	select {
	case err := <-settled:
		t.Fatalf("Settle returned (%v) while More said more were coming", err)
	case <-time.After(50 * time.Millisecond): // a wait for something that must not happen
	}
	if ids, _ := s.IDs(); len(ids) != 0 {
		t.Fatalf("%d finished while Settle waited, want none", len(ids))
	}
	more.Store(false)
	b.Wake()
	if err := <-settled; err != nil {
		t.Fatal(err)
	}
	if ids, _ := s.IDs(); len(ids) != len(recs) {
		t.Fatalf("%d finished after Settle, want all %d in one commit", len(ids), len(recs))
	}
}
