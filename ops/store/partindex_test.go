package store

import (
	"errors"
	"slices"
	"testing"
)

// partLister is a store's unfinished uploads as a PartialIndex reads them.
type partLister struct {
	ids     []string
	of      map[string]PartialOf
	batch   map[string]bool
	bad     map[string]bool
	fail    bool
	lists   int
	dropped [][]string
}

func (l *partLister) PartialIDs() ([]string, error) {
	l.lists++
	if l.fail {
		return nil, errors.New("cannot list")
	}
	return l.ids, nil
}

func (l *partLister) PartialOf(id string) (PartialOf, bool, error) {
	if l.bad[id] {
		return PartialOf{}, l.batch[id], errors.New("damaged")
	}
	return l.of[id], l.batch[id], nil
}

func (l *partLister) DropDeadBatches(ids []string) { l.dropped = append(l.dropped, ids) }

// The index finds a stream's unfinished uploads by source path and name, lists the store once
// (after a listing that failed, again), drops the dead batches it found, and adds what this
// process begins once it is read.
func TestPartialIndex(t *testing.T) {
	l := &partLister{
		ids: []string{"s1", "s2", "other", "chunks", "folder", "batch", "damaged"},
		of: map[string]PartialOf{
			"s1":     {Name: "a", Path: "/src/a", Streamed: true},
			"s2":     {Name: "a", Path: "/src/a", Streamed: true},
			"other":  {Name: "a", Path: "/elsewhere/a", Streamed: true},
			"chunks": {Name: "a", Path: "/src/a"},               // a step-by-step upload's
			"folder": {Name: "a", Path: "/src/a", Folder: true}, // a folder upload's
			"batch":  {Name: "batch"},                           // a staging partial
		},
		batch: map[string]bool{"batch": true},
		bad:   map[string]bool{"damaged": true},
		fail:  true,
	}
	var x PartialIndex
	x.Note("/src/a", "a", "early") // before the index is read: the listing finds it
	if _, err := x.Of(l, "/src/a", "a"); err == nil {
		t.Fatal("a listing that failed gave an index")
	}
	l.fail = false
	got, err := x.Of(l, "/src/a", "a")
	if err != nil || !slices.Equal(got, []string{"s1", "s2"}) {
		t.Fatalf("got %v %v, want the two streams of /src/a", got, err)
	}
	if len(l.dropped) != 1 || !slices.Equal(l.dropped[0], []string{"batch"}) {
		t.Fatalf("dropped %v, want the staging partial once", l.dropped)
	}
	x.Note("/src/a", "a", "s3")
	x.Note("/src/b", "b", "s4")
	if got, _ := x.Of(l, "/src/a", "a"); !slices.Equal(got, []string{"s1", "s2", "s3"}) {
		t.Fatalf("got %v after a note", got)
	}
	if got, _ := x.Of(l, "/src/b", "b"); !slices.Equal(got, []string{"s4"}) {
		t.Fatalf("got %v for b", got)
	}
	if got, _ := x.Of(l, "/src/a", "b"); len(got) != 0 {
		t.Fatalf("got %v for another name of the same path", got)
	}
	if l.lists != 2 || len(l.dropped) != 1 {
		t.Fatalf("%d listings, %d drops: the index is read once", l.lists, len(l.dropped))
	}
}
