//go:build unix

package local

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
)

// batchFiles writes n small source files and returns their records and contents.
func batchFiles(t *testing.T, n int) ([]*manifest.Record, [][]byte) {
	t.Helper()
	dir := t.TempDir()
	recs, contents := make([]*manifest.Record, n), make([][]byte, n)
	for i := range recs {
		path := filepath.Join(dir, fmt.Sprintf("f%03d.bin", i))
		contents[i] = writeRandom(t, path, 1000+i*37, uint64(i+1))
		recs[i] = recordFor(path, contents[i])
	}
	return recs, contents
}

// buildAll uploads recs into b's store, one after another, each built into b: with chunk 0 in
// the batch's staging partial (each file is one chunk), with ownChunk each in a partial of its own.
func buildAll(t *testing.T, b *groupBatch, recs []*manifest.Record, chunk int) {
	t.Helper()
	for _, r := range recs {
		must(t, b.s.UploadRecord(context.Background(), r, UploadOptions{Batch: b, Chunk: chunk}))
	}
}

// ownChunk is a chunk smaller than every file of batchFiles: each goes through a partial of its own.
const ownChunk = 512

// perCommit is how many uploads of a kind a batch holds before it commits them on its own.
func perCommit(chunk int) int {
	if chunk == 0 && !fileSyncEach {
		return batchFull
	}
	return batchMax
}

// idsOf is the sorted upload ids the records name.
func idsOf(recs []*manifest.Record) []string {
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.Upload.ID)
	}
	slices.Sort(ids)
	return ids
}

func TestBatchPublishesOnCommit(t *testing.T) {
	type run struct {
		n, chunk int
	}
	runs := []run{{1, 0}, {3, 0}, {1, ownChunk}, {3, ownChunk}, {batchMax, ownChunk}, {batchMax + 5, ownChunk}}
	if !fileSyncEach { // where a staged upload counts less, its own full batch
		runs = append(runs, run{batchFull + 5, 0})
	} else {
		runs = append(runs, run{batchMax + 5, 0})
	}
	for _, r := range runs {
		n := r.n
		t.Run(fmt.Sprint(n, "-", r.chunk), func(t *testing.T) {
			s := newStore(t)
			recs, contents := batchFiles(t, n)
			b := s.newBatch()
			buildAll(t, b, recs, r.chunk)
			b.Quiet() // the full batches, committed while the next was built
			// Before Commit only the full batches are finished.
			ids, err := s.IDs()
			must(t, err)
			per := perCommit(r.chunk)
			if want := n / per * per; len(ids) != want {
				t.Fatalf("%d finished before Commit, want %d", len(ids), want)
			}
			partials, err := s.partialIDs()
			must(t, err)
			// Each waits in a partial of its own, or all in the batch's staging partial.
			if want := n - len(ids); r.chunk == 0 && len(partials) != 1 || r.chunk != 0 && len(partials) != want {
				t.Fatalf("%d partials waiting, want %d uploads waiting", len(partials), want)
			}
			must(t, b.Commit())
			ids, err = s.IDs()
			must(t, err)
			if !slices.Equal(ids, idsOf(recs)) {
				t.Fatalf("finished %v, records name %v", ids, idsOf(recs))
			}
			for i, r := range recs {
				m, err := s.ReadMeta(r.Upload.ID)
				must(t, err)
				if got := mustRead(t, r.Upload.Path); !bytes.Equal(got, contents[i]) || m.Blake3 != b3(contents[i]) || m.Size != int64(len(contents[i])) {
					t.Fatalf("upload %d: %d bytes, meta %+v", i, len(got), m)
				}
			}
			if partials, _ := s.partialIDs(); len(partials) != 0 {
				t.Fatalf("partials left: %v", partials)
			}
			must(t, b.Commit()) // nothing left: a no-op
		})
	}
}

// An upload that cannot be placed (its folder name taken) fails with its code and is an unfinished
// upload again, which the next run resumes under the same id; the others are published.
func TestBatchCommitFailureResumes(t *testing.T) {
	s := newStore(t)
	recs, contents := batchFiles(t, 3)
	b := s.newBatch()
	buildAll(t, b, recs, ownChunk)
	taken := recs[1].Upload.ID
	must(t, os.Mkdir(s.UploadDir(taken), DirMode))
	err := b.Commit()
	wantCode(t, err, fault.UploadUnreadable)
	for _, i := range []int{0, 2} {
		if got := mustRead(t, recs[i].Upload.Path); !bytes.Equal(got, contents[i]) {
			t.Fatalf("upload %d not published", i)
		}
	}
	if partials, _ := s.partialIDs(); !slices.Equal(partials, []string{taken}) {
		t.Fatalf("partials %v, want the one that failed", partials)
	}
	must(t, os.Remove(s.UploadDir(taken)))
	resumesAll(t, s, recs[1:2], contents[1:2])
}

// resumesAll uploads each record's file again without a batch and wants it finished under the id
// the record names, with its content, and next to nothing written again (resumed, not copied).
func resumesAll(t *testing.T, s *localStore, recs []*manifest.Record, contents [][]byte) {
	t.Helper()
	before := wchar(t)
	for i, r := range recs {
		again := recordFor(r.Path, contents[i])
		must(t, s.UploadRecord(context.Background(), again, UploadOptions{}))
		if again.Upload.ID != r.Upload.ID || !bytes.Equal(mustRead(t, again.Upload.Path), contents[i]) {
			t.Fatalf("upload %d: resumed as %s, want %s with its content", i, again.Upload.ID, r.Upload.ID)
		}
	}
	if w := wchar(t) - before; w > int64(len(recs))*16<<10 {
		t.Fatalf("wrote %d bytes again: not resumed", w)
	}
}

// A run that dies before Commit leaves built partials (their finished folder inside them); the
// next run resumes each under its id without copying it again.
func TestBatchCrashBeforeCommit(t *testing.T) {
	s := newStore(t)
	recs, contents := batchFiles(t, 4)
	b := s.newBatch()
	buildAll(t, b, recs, ownChunk)
	for _, o := range b.Built() { // the process dies: its locks go, nothing is committed
		o.p.close()
	}
	if ids, _ := s.IDs(); len(ids) != 0 {
		t.Fatalf("finished without a commit: %v", ids)
	}
	resumesAll(t, s, recs, contents)
}

// Small files staged in a batch: one that cannot be placed fails with its code, the others are
// published, and nothing is left once the batch is done; the next run uploads it afresh.
func TestBatchStagedFailure(t *testing.T) {
	s := newStore(t)
	recs, contents := batchFiles(t, 3)
	b := s.newBatch()
	buildAll(t, b, recs, 0)
	taken := recs[1].Upload.ID
	must(t, os.Mkdir(s.UploadDir(taken), DirMode))
	wantCode(t, b.Commit(), fault.UploadUnreadable)
	for _, i := range []int{0, 2} {
		if got := mustRead(t, recs[i].Upload.Path); !bytes.Equal(got, contents[i]) {
			t.Fatalf("upload %d not published", i)
		}
	}
	if partials, _ := s.partialIDs(); len(partials) != 0 {
		t.Fatalf("partials left: %v", partials)
	}
	again := recordFor(recs[1].Path, contents[1])
	b = s.newBatch()
	must(t, s.UploadRecord(context.Background(), again, UploadOptions{Batch: b}))
	must(t, b.Commit())
	if again.Upload.ID == taken || !bytes.Equal(mustRead(t, again.Upload.Path), contents[1]) {
		t.Fatalf("uploaded again as %s (the failed one was %s)", again.Upload.ID, taken)
	}
}

// A run that dies before its commit leaves the staging partial with its built uploads, none of
// them finished or reported. Another run leaves it alone while its run holds it; once the run is
// dead, the next batch removes it and uploads the files again, each whole.
func TestBatchStagedCrash(t *testing.T) {
	s := newStore(t)
	recs, contents := batchFiles(t, 4)
	b := s.newBatch()
	buildAll(t, b, recs, 0)
	other, err := openStore(s.Dir, false) // another process's view of the store
	must(t, err)
	if _, err := other.parts.Of(other, "", ""); err != nil {
		t.Fatal(err)
	}
	if partials, _ := s.partialIDs(); len(partials) != 1 {
		t.Fatalf("a held staging partial was removed: %v", partials)
	}
	for _, o := range b.Built() { // the process dies: its descriptors and lock go
		o.release()
	}
	st, err := b.staging() // made by the builds
	must(t, err)
	st.close()
	if ids, _ := s.IDs(); len(ids) != 0 {
		t.Fatalf("finished without a commit: %v", ids)
	}
	again := make([]*manifest.Record, len(recs))
	next, err := openStore(s.Dir, true) // the next run
	must(t, err)
	nb := next.newBatch()
	for i, r := range recs {
		again[i] = recordFor(r.Path, contents[i])
		must(t, next.UploadRecord(context.Background(), again[i], UploadOptions{Batch: nb}))
	}
	must(t, nb.Commit())
	for i, r := range again {
		if got := mustRead(t, r.Upload.Path); !bytes.Equal(got, contents[i]) {
			t.Fatalf("upload %d: %d bytes", i, len(got))
		}
	}
	if partials, _ := s.partialIDs(); len(partials) != 0 {
		t.Fatalf("partials left: %v", partials)
	}
}

// Settle commits what the batch holds when the upload asked for is among it, waits when it is in
// another worker's commit, and returns that upload's own error (to every record naming it);
// Commit then returns only what no Settle returned.
func TestBatchSettle(t *testing.T) {
	s := newStore(t)
	recs, contents := batchFiles(t, 6)
	b := s.newBatch()
	buildAll(t, b, recs[:3], 0)
	taken := recs[2].Upload.ID
	must(t, os.Mkdir(s.UploadDir(taken), DirMode)) // its place will fail
	must(t, b.Settle(recs[0].Upload.ID))           // commits all three
	for _, i := range []int{0, 1} {
		if !bytes.Equal(mustRead(t, recs[i].Upload.Path), contents[i]) {
			t.Fatalf("upload %d not finished after Settle", i)
		}
	}
	must(t, b.Settle(recs[1].Upload.ID)) // already committed: nothing to do
	wantCode(t, b.Settle(taken), fault.UploadUnreadable)
	wantCode(t, b.Settle(taken), fault.UploadUnreadable) // a later record of the same file too

	// Workers build while others settle: every record settles finished, none early.
	var wg sync.WaitGroup
	for _, r := range recs[3:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.UploadRecord(context.Background(), r, UploadOptions{Batch: b}); err != nil {
				t.Error(err)
				return
			}
			if err := b.Settle(r.Upload.ID); err != nil {
				t.Error(err)
				return
			}
			if _, err := os.Stat(r.Upload.Path); err != nil {
				t.Errorf("settled but not finished: %v", err)
			}
		}()
	}
	wg.Wait()
	must(t, b.Commit()) // the failure was reported by Settle, so not again
}

// Workers that upload the same file at the same time (a manifest naming it twice, worked in
// parallel) make one upload: every record names it, and a record settled while another worker is
// still building it waits until it is finished.
func TestBatchSameFileAtOnce(t *testing.T) {
	s := newStore(t)
	dir := t.TempDir()
	for round := range 30 {
		path := filepath.Join(dir, fmt.Sprintf("same%02d.bin", round))
		content := writeRandom(t, path, 5000+round, uint64(100+round))
		b := s.newBatch()
		recs := make([]*manifest.Record, 4)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range recs {
			recs[i] = recordFor(path, content)
			if round%2 == 1 {
				recs[i].Blake3 = "" // hashed while copied (sniff --no-hash): found only after the copy
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if err := s.UploadRecord(context.Background(), recs[i], UploadOptions{Batch: b}); err != nil {
					t.Error(err)
					return
				}
				if err := b.Settle(recs[i].Upload.ID); err != nil {
					t.Error(err)
					return
				}
				if got, err := os.ReadFile(recs[i].Upload.Path); err != nil || !bytes.Equal(got, content) {
					t.Errorf("settled but not finished: %v", err)
				}
			}()
		}
		close(start)
		wg.Wait()
		must(t, b.Commit())
		for _, r := range recs[1:] {
			if r.Upload.ID != recs[0].Upload.ID {
				t.Fatalf("round %d: records name %v, want one upload", round, idsOf(recs))
			}
		}
		if partials, _ := s.partialIDs(); len(partials) != 0 {
			t.Fatalf("round %d: copies left as partials: %v", round, partials)
		}
	}
	ids, err := s.IDs()
	must(t, err)
	if len(ids) != 30 {
		t.Fatalf("%d uploads for 30 files", len(ids))
	}
}
