//go:build unix

package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/attachctl/attachctl/manifest"
)

// BenchmarkBatchSmall is a batch of many small files uploaded by a few workers at once, committed
// together, then each record settled as the upload stage does: the row of `upload --each` of a
// folder of small files, with the disk's part in it.
func BenchmarkBatchSmall(b *testing.B) {
	const files, workers = 256, 4
	dir := b.TempDir()
	paths, contents := make([]string, files), make([][]byte, files)
	for i := range paths {
		paths[i] = filepath.Join(dir, fmt.Sprintf("f%03d.txt", i))
		contents[i] = []byte(fmt.Sprintf("small file %d\n", i))
		if err := os.WriteFile(paths[i], contents[i], 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		s := testStore(b)
		recs := make([]*manifest.Record, files)
		for i := range recs {
			recs[i] = recordFor(paths[i], contents[i])
		}
		b.StartTimer()
		batch := s.newBatch()
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := w; i < files; i += workers {
					if err := s.UploadRecord(context.Background(), recs[i], UploadOptions{Batch: batch}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if err := batch.Commit(); err != nil {
			b.Fatal(err)
		}
		for _, r := range recs {
			if err := batch.Settle(r.Upload.ID); err != nil {
				b.Fatal(err)
			}
		}
	}
}
