//go:build unix

package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
)

// TestBackendFirstOpensAtOnce: reads and uploads through one fresh backend at once, as a stage's
// workers make them. A read that judged the store while an upload was making it (store.notStore:
// no mark yet) used to be kept for every later read, and its open raced the upload's; now the
// opens take turns, every upload begins, and once they have, every read sees the store.
func TestBackendFirstOpensAtOnce(t *testing.T) {
	ctx := context.Background()
	for round := range 50 {
		b, err := New(filepath.Join(t.TempDir(), fmt.Sprint("st", round)))
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i%2 == 0 {
					b.Features().Limiter.Limits(ctx) // may fail: the store may not be made yet
					b.Location()
					return
				}
				if _, err := b.Begin(ctx, fmt.Sprintf("f%d.txt", i), 1); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("round %d: begin: %v", round, err)
		}
		if _, err := b.Features().Limiter.Limits(ctx); err != nil {
			t.Errorf("round %d: limits once the uploads began: %v", round, err)
		}
	}
}

// TestBeginRefusedMakesNoStore: a begin refused for what it is given (a name that is not plain,
// a size below -1) makes nothing, as on S3 (store.CheckBegin before the store is made): the
// folder of a store that did not exist is still not there.
func TestBeginRefusedMakesNoStore(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		size int64
	}{{"../x", 1}, {"x.bin", -2}} {
		dir := filepath.Join(t.TempDir(), "chat-1")
		_, err := newBackend(t, dir).Begin(ctx, c.name, c.size)
		wantCode(t, err, fault.UploadInvalid)
		if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("begin %q of %d bytes, refused, left %s: %v", c.name, c.size, dir, err)
		}
	}
}
