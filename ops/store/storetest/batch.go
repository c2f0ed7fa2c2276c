package storetest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops/stage"
	"github.com/attachctl/attachctl/ops/store"
)

// The group commit (store.GroupBatch), run on a backend that has a Batcher (Run): what Settle
// waits for, and one upload of the same bytes built by two workers at once.
var batchTests = []struct {
	name string
	f    func(t *testing.T, h Harness)
}{
	{"BatchSettleWaitsForMore", testBatchSettleWaits},
	{"BatchSameFileAtOnce", testBatchSameFileAtOnce},
}

// newBatch is a new batch of b's.
func newBatch(t *testing.T, b store.Backend) store.Batch {
	t.Helper()
	batch, err := stage.NewBatch(ctx, b)
	must(t, "new batch", err)
	if batch == nil {
		t.Fatal("no batch from a backend that declares a Batcher")
	}
	return batch
}

// testBatchSettleWaits: while the stage says more records are coming (Options.More), a Settle of
// an upload the batch holds waits, nothing is published, and the uploads that reach the batch
// meanwhile go in the same commit; once More turns false (Wake), the Settle commits them all.
func testBatchSettleWaits(t *testing.T, h Harness) {
	b := h.New(t)
	batch := newBatch(t, b)
	var more atomic.Bool
	more.Store(true)
	u := uploader(t, b, stage.Options{Batch: batch, More: more.Load})
	recs := make([]*manifest.Record, 3)
	for i := range recs {
		path, _ := sourceFile(t, 1000+int64(i), uint64(40+i))
		recs[i] = &manifest.Record{Path: path, Name: fmt.Sprintf("f%d.bin", i)}
	}
	must(t, "upload in a batch", u.Upload(ctx, recs[0], nil))
	settled := make(chan struct{})
	go func() {
		defer close(settled)
		u.Settle(recs[0])
	}()
	for _, rec := range recs[1:] {
		must(t, "upload in a batch", u.Upload(ctx, rec, nil))
	}
	select {
	case <-settled:
		t.Fatalf("Settle returned (%v) while More said more records were coming", recs[0].Error)
	case <-time.After(50 * time.Millisecond): // a wait for something that must not happen
	}
	for _, rec := range recs {
		if _, err := b.Info(ctx, rec.Upload.ID); err == nil {
			t.Fatalf("upload %s finished while Settle waited", rec.Upload.ID)
		}
	}
	more.Store(false)
	u.Wake()
	select {
	case <-settled:
	case <-time.After(time.Minute):
		t.Fatal("Settle still waits once More is false")
	}
	if recs[0].Failed() {
		t.Fatalf("settle: %v", recs[0].Error)
	}
	for _, rec := range recs { // one commit: the others are finished before their Settle
		if _, err := b.Info(ctx, rec.Upload.ID); err != nil {
			t.Fatalf("upload %s not finished with the first: %v", rec.Upload.ID, err)
		}
	}
	must(t, "commit", u.Commit())
	finishedOnly(t, b, len(recs))
}

// testBatchSameFileAtOnce: workers of one batch that upload the same file at the same time (a
// manifest naming it more than once), small or of several chunks, with its BLAKE3 known or found
// while copied, make one upload: every record names it, and a record settled while another worker
// still builds it waits until it is finished.
func testBatchSameFileAtOnce(t *testing.T, h Harness) {
	b := h.New(t)
	chunk := stageChunk(b)
	for round := range 8 {
		size := int64(1000 + round)
		if round%2 == 1 {
			size += 2 * chunk
		}
		path, data := sourceFile(t, size, uint64(60+round))
		batch := newBatch(t, b)
		recs := make([]*manifest.Record, 4)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range recs {
			recs[i] = &manifest.Record{Path: path, Name: fmt.Sprintf("same%d.bin", round)}
			if round/2%2 == 1 {
				recs[i].Blake3 = sum(data)
			}
			wg.Go(func() {
				u := uploader(t, b, stage.Options{Batch: batch})
				<-start
				if err := u.Upload(ctx, recs[i], nil); err != nil {
					t.Error(err)
					return
				}
				if u.Settle(recs[i]); recs[i].Failed() {
					t.Errorf("settle: %v", recs[i].Error)
					return
				}
				if _, err := b.Info(ctx, recs[i].Upload.ID); err != nil {
					t.Errorf("settled but not finished: %v", err)
				}
			})
		}
		close(start)
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		must(t, "commit", batch.Commit())
		for _, rec := range recs[1:] {
			if rec.Upload.ID != recs[0].Upload.ID {
				t.Fatalf("round %d: the same file uploaded at once made more than one upload", round)
			}
		}
		finishedOnly(t, b, round+1)
	}
}
