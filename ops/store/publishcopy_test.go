package store

import (
	"context"
	"slices"
	"testing"
	"time"
)

// copyWrite is a CopyWrite that records what PublishCopy did with it.
type copyWrite struct {
	id      string
	found   []string // PublishOwn's ErrCopyFound, once for each, after it is told to index
	index   func(id string)
	dropped bool
	built   bool
	own     bool
}

func (w *copyWrite) ID() string { return w.id }
func (w *copyWrite) BatchBuild(id, _ string) (string, error) {
	w.built = true
	return id, nil
}
func (w *copyWrite) BatchUnbuild(string, error) {}
func (w *copyWrite) DropCopy()                  { w.dropped = true }
func (w *copyWrite) PublishOwn(sum string) (*Info, error) {
	if len(w.found) > 0 {
		w.index(w.found[0]) // finished by another worker just now
		w.found = w.found[1:]
		return nil, ErrCopyFound
	}
	w.own = true
	return &Info{ID: w.id, Blake3: sum}, nil
}

// copyCommitter is a GroupCommitter that holds what it is given.
type copyCommitter struct{}

func (copyCommitter) BatchItem(id string) (string, int)      { return id, 1 }
func (copyCommitter) BatchJoin(*struct{}, string) error      { return nil }
func (copyCommitter) BatchCommit([]string, struct{}) []error { return nil }
func (copyCommitter) BatchIdle()                             {}

// TestPublishCopy: a stream's publish names an upload of the same bytes and name that the index
// finds and that is still intact, dropping its copy; a damaged one is avoided (forgotten) and the
// next looked for; in a batch, one another worker claimed is named, else the copy is built into
// the batch; else it is published, and one the backend finds as it publishes is looked at first.
func TestPublishCopy(t *testing.T) {
	ctx := context.Background()
	data := []byte("the same bytes")
	sum := sum3(data)
	const mine, good, bad, claimed = "0190c4d2-0000-7000-8000-000000000100", "0190c4d2-0000-7000-8000-000000000001",
		"0190c4d2-0000-7000-8000-000000000002", "0190c4d2-0000-7000-8000-000000000003"
	m, idx := newMemStreams(), &FinishedIndex{}
	index := func(id string) {
		f := memFinished{info: Info{ID: id, Name: "a.txt", Size: int64(len(data)), Blake3: sum}, data: data}
		if id == bad {
			f.data = []byte("damaged bytes!")
		}
		m.finished[id] = f
		idx.Add(&f.info)
	}
	for _, tc := range []struct {
		name     string
		finished []string // indexed in this order: the last of the same key is found
		found    []string // PublishOwn finds one this many times, the index told of it meanwhile
		claim    string   // another worker of the batch claimed the bytes ("": no batch)
		want     string
		dropped  bool
		built    bool
		own      bool
	}{
		{"none: published", nil, nil, "", mine, false, false, true},
		{"an intact one named", []string{good}, nil, "", good, true, false, false},
		{"a damaged one avoided: published", []string{bad}, nil, "", mine, false, false, true},
		{"found as it published: named", nil, []string{good}, "", good, true, false, false},
		{"a damaged one avoided, found as it published: named", []string{bad}, []string{good}, "", good, true, false, false},
		{"in a batch, none: built", nil, nil, mine, mine, false, true, false},
		{"in a batch, claimed by another: named", nil, nil, claimed, claimed, true, false, false},
		{"in a batch, an intact one named first", []string{good}, nil, claimed, good, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, idx = newMemStreams(), &FinishedIndex{}
			for _, id := range tc.finished {
				index(id)
			}
			w := &copyWrite{id: mine, found: tc.found, index: index}
			c := CopyPublish[string]{B: m, Index: idx}
			if tc.claim != "" {
				b := NewGroupBatch[string, struct{}](m, copyCommitter{}, 100)
				b.Claim(sum, "a.txt", tc.claim)
				c.Batch = b
			}
			info, err := PublishCopy(ctx, c, CopyWrite[string](w), "a.txt", int64(len(data)), sum)
			if err != nil || info.ID != tc.want {
				t.Fatalf("PublishCopy = %+v, %v; want %s", info, err, tc.want)
			}
			if w.dropped != tc.dropped || w.built != tc.built || w.own != tc.own {
				t.Errorf("dropped %v, built %v, published own %v; want %v %v %v", w.dropped, w.built, w.own, tc.dropped, tc.built, tc.own)
			}
			if slices.Contains(tc.finished, bad) && idx.Find(nil, sum, "a.txt", "") == bad {
				t.Error("the damaged upload is still indexed")
			}
		})
	}
}

// changingStore is an indexStore that another process keeps changing: its change time moves at
// each look, so every miss of the index lists it again.
type changingStore struct{ *indexStore }

func (c changingStore) Changed() time.Time {
	c.at = c.at.Add(time.Second)
	return c.at
}

// TestPublishCopyTwoDamaged: two damaged uploads of the same bytes and name in a store that keeps
// changing are each read back once, not found in turn for ever, and the copy is published.
func TestPublishCopyTwoDamaged(t *testing.T) {
	ctx := context.Background()
	data := []byte("the same bytes")
	sum := sum3(data)
	const mine = "0190c4d2-0000-7000-8000-000000000100"
	m, src := newMemStreams(), newIndexStore()
	for _, id := range []string{"0190c4d2-0000-7000-8000-000000000001", "0190c4d2-0000-7000-8000-000000000002"} {
		f := memFinished{info: *src.place(id, sum, "a.txt", int64(len(data))), data: []byte("damaged bytes!")}
		m.finished[id] = f
	}
	cs := changingStore{src}
	idx := &FinishedIndex{}
	done := make(chan struct{})
	var info *Info
	var err error
	w := &copyWrite{id: mine}
	go func() {
		defer close(done)
		info, err = PublishCopy(ctx, CopyPublish[string]{B: m, Index: idx, From: cs}, CopyWrite[string](w), "a.txt", int64(len(data)), sum)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("PublishCopy still looking after %d listings", src.lists)
	}
	if err != nil || info.ID != mine || !w.own {
		t.Fatalf("PublishCopy = %+v, %v (published own %v); want %s published", info, err, w.own, mine)
	}
	if src.lists > 4 {
		t.Errorf("%d listings for two damaged uploads", src.lists)
	}
}
