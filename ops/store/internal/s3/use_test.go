package s3

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops/acp"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/storetest/s3test"
	"github.com/attachctl/attachctl/sweep"
)

// requests counts the requests a store's client sends, by operation.
type requests struct {
	mu sync.Mutex
	n  map[string]int
}

// countRequests makes s count its requests from now on.
func countRequests(s *Store) *requests {
	c := &requests{n: map[string]int{}}
	s.client = awss3.New(s.client.Options(), func(o *awss3.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("count", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				c.mu.Lock()
				c.n[awsmiddleware.GetOperationName(ctx)]++
				c.mu.Unlock()
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
		})
	})
	return c
}

func (c *requests) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}

// lookUp lists P/<id>/ once: the finished upload's name ("" when there is none) and its marker,
// what LookUpAll is checked against.
func (s *Store) lookUp(ctx context.Context, id string) (store.UploadFolder, error) {
	l, err := s.up.WalkID(ctx, id)
	if err != nil {
		return store.UploadFolder{}, err
	}
	return store.SettleFolder(ctx, folders{objects{s}}, id, l.Read())
}

// TestLookUpAll checks the batched look-up against one listing per id, whatever the page size and
// however the ids are spread: finished uploads with and without a marker, a tombstone, ids not in
// the store (before, between and after the others), repeats; and that it sends at most two
// listings per id (pages of one object excepted), and one for ids side by side.
func TestLookUpAll(t *testing.T) {
	srv := s3test.Start(t)
	s := newStore(t, srv)
	dir := t.TempDir()
	var ids []string
	for i := range 9 {
		path := filepath.Join(dir, fmt.Sprintf("f%d.txt", i))
		if err := os.WriteFile(path, []byte(fmt.Sprintf("file %d\n", i)), 0o600); err != nil {
			t.Fatal(err)
		}
		rec := &manifest.Record{Path: path, Mime: "text/plain", Kind: "text"}
		if err := s.UploadRecord(bg, rec, UploadOptions{}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.Upload.ID)
	}
	if err := s.MarkUsed(bg, ids[:6], time.Now()); err != nil {
		t.Fatal(err)
	}
	n4, err := s.lookUp(bg, ids[4])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.WriteUseMark(bg, objects{s}, ids[4], n4.Mark, "tombstone", time.Now(), store.ErrSweepKept); err != nil {
		t.Fatal(err)
	}
	absent := func() string {
		id, err := store.NewID()
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	before := "00000000-0000-7000-8000-000000000000"
	after := "ffffffff-ffff-7fff-bfff-ffffffffffff"
	cases := map[string][]string{
		"all":     ids,
		"one":     {ids[3]},
		"reverse": {ids[8], ids[7], ids[5], ids[4], ids[1]},
		"absent":  {before, ids[0], absent(), ids[2], after},
		"repeats": {ids[1], ids[1], ids[6], ids[1]},
		"spread":  {ids[0], ids[8]},
	}
	c := countRequests(s)
	for _, page := range []int{1, 2, 3, 1000} {
		for name, want := range cases {
			t.Run(fmt.Sprintf("%s/page%d", name, page), func(t *testing.T) {
				defer func(lo, hi int) { s.up.MinPage, s.up.MaxPage = lo, hi }(s.up.MinPage, s.up.MaxPage)
				s.up.MinPage, s.up.MaxPage = page, page
				c.take()
				notes, err := s.up.LookUpAll(bg, want)
				if err != nil {
					t.Fatal(err)
				}
				// A folder holds two objects here: a page of one may need three listings to see it whole.
				if n, most := c.take()["ListObjectsV2"], len(want)*(1+(2+page-1)/page); n > most {
					t.Errorf("%d listings for %d ids, want at most %d", n, len(want), most)
				} else if page == 1000 && n != 1 {
					t.Errorf("%d listings for ids side by side, want 1", n)
				}
				for i, id := range want {
					n, err := s.lookUp(bg, id)
					if err != nil {
						t.Fatal(err)
					}
					if notes[i] != n {
						t.Errorf("id %s: %+v, one listing of its folder says %+v", id, notes[i], n)
					}
				}
			})
		}
	}
	// The cases cover every kind: finished and used, finished and never used, tombstoned, absent.
	notes, _ := s.up.LookUpAll(bg, cases["absent"])
	n4, _ = s.lookUp(bg, ids[4])
	n7, _ := s.lookUp(bg, ids[7])
	if notes[0].Name != "" || notes[1].Name != "f0.txt" || !notes[1].Mark.Exists || !n4.Mark.Tombstone || n7.Mark.Exists {
		t.Fatalf("the store is not what the cases need: %+v, %+v, %+v", notes, n4, n7)
	}
}

// BenchmarkMarkUsed50 is the floor of a resolve of 50 uploads: what marking them used costs (the
// look-up and a conditional write each), whatever else resolve does.
func BenchmarkMarkUsed50(b *testing.B) {
	srv := s3test.Start(b)
	s := newStore(b, srv)
	dir := b.TempDir()
	var ids []string
	for i := range 50 {
		path := filepath.Join(dir, fmt.Sprintf("f%d.txt", i))
		if err := os.WriteFile(path, []byte(fmt.Sprintf("file %d\n", i)), 0o600); err != nil {
			b.Fatal(err)
		}
		rec := &manifest.Record{Path: path, Mime: "text/plain", Kind: "text"}
		if err := s.UploadRecord(bg, rec, UploadOptions{}); err != nil {
			b.Fatal(err)
		}
		ids = append(ids, rec.Upload.ID)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := s.MarkUsed(bg, ids, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResolveFifty resolves the 50 screenshots of 800 KiB from the S3 store with every
// working copy in place (the bench section's warm row, without the process's start).
func BenchmarkResolveFifty(b *testing.B) {
	srv := s3test.Start(b)
	s := newStore(b, srv)
	dir, work := b.TempDir(), b.TempDir()
	recs := make([]*manifest.Record, 50)
	for i := range recs {
		path := filepath.Join(dir, fmt.Sprintf("shot-%02d.png", i))
		if err := os.WriteFile(path, pngOf(819200, uint64(i)), 0o600); err != nil {
			b.Fatal(err)
		}
		recs[i] = &manifest.Record{Path: path, Mime: "image/png", Kind: "image"}
		if err := s.UploadRecord(bg, recs[i], UploadOptions{Jobs: 2}); err != nil {
			b.Fatal(err)
		}
	}
	prompt, err := acp.Prompt(recs, acp.PromptOptions{Session: "s1", Text: "What changed?", HasText: true})
	if err != nil {
		b.Fatal(err)
	}
	resolve := func() {
		res, err := acp.Resolve(prompt, acp.Backend(bg, s), acp.Options{Caps: acp.Caps{Image: true}, Workdir: work})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := res.WriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	resolve() // the copies
	b.ResetTimer()
	for b.Loop() {
		resolve()
	}
}

// finishKilled begins an upload of "abc", then finishes it as a finish killed after its publish
// does: the partial's info and chunks put back beside the finished upload. listed runs before the
// finish (nil: nothing).
func finishKilled(t *testing.T, s *Store, listed func()) string {
	t.Helper()
	bg := context.Background()
	id, err := s.Begin(bg, "a.txt", -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(bg, id, 0, strings.NewReader("abc")); err != nil {
		t.Fatal(err)
	}
	var left []string
	s.listObjects(bg, s.key(internalDir, "partial", id)+"/", func(o types.Object) error {
		left = append(left, aws.ToString(o.Key))
		return nil
	})
	pi, err := s.readInfo(bg, id)
	if err != nil {
		t.Fatal(err)
	}
	if listed != nil {
		listed()
	}
	if _, err := s.Finish(bg, id, 3, ""); err != nil {
		t.Fatal(err)
	}
	for _, k := range left {
		if _, err := s.client.PutObject(bg, &awss3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String(k), Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.WriteInfo(bg, objects{s}, id, pi, store.AnyVersion); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestSweepDropsFinishLeftover: what a finish killed after its publish leaves beside the finished
// upload of its id (the partial's info and chunks) is no upload: ls does not show it, and the
// next sweep removes it as it begins, the finished upload kept, as the local store does.
func TestSweepDropsFinishLeftover(t *testing.T) {
	srv := s3test.Start(t)
	s := newStore(t, srv)
	bg := context.Background()
	id := finishKilled(t, s, nil)
	l, err := s.List(bg)
	if err != nil || len(l.Entries) != 1 || !l.Entries[0].Finished || len(l.Skipped) != 0 {
		t.Fatalf("listed %+v, %v: want the finished upload alone", l, err)
	}
	if _, err := sweep.Remove(bg, s, nil, 0, false, nil); err != nil { // a sweep that removes no upload
		t.Fatal(err)
	}
	var still []string
	s.listObjects(bg, s.key(internalDir, "partial")+"/", func(o types.Object) error {
		still = append(still, aws.ToString(o.Key))
		return nil
	})
	if len(still) != 0 {
		t.Fatalf("the finish's leftovers are still there: %v", still)
	}
	if _, err := s.Info(bg, id); err != nil {
		t.Fatal(err)
	}
}

// TestSweepFinishedSinceListed: an unfinished upload finished between the listing and the
// sweep's re-check is Gone, as the local store's re-check says, even when its finish was killed
// after its publish and left its partial: not reported Removed while it stays, finished.
func TestSweepFinishedSinceListed(t *testing.T) {
	srv := s3test.Start(t)
	s := newStore(t, srv)
	bg := context.Background()
	sw, err := s.Sweep(bg, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	var l *store.Listing
	id := finishKilled(t, s, func() {
		if l, err = s.List(bg); err != nil || len(l.Entries) != 1 || l.Entries[0].Finished {
			t.Fatalf("listed %+v, %v: want one unfinished upload", l, err)
		}
	})
	var got []store.Outcome
	err = sw.Remove(bg, l.Entries, func(store.Entry) bool { return true }, func(e store.Entry, o store.Outcome, err error) error {
		got = append(got, o)
		return err
	})
	if err != nil || len(got) != 1 || got[0] != store.Gone {
		t.Fatalf("the re-check of %s, finished since it was listed: %v, %v; want Gone", id, got, err)
	}
	if _, err := s.Info(bg, id); err != nil {
		t.Fatal(err)
	}
}
