package store

import (
	"errors"
	"slices"
	"testing"
)

// deadHeld is an unfinished upload taken by DropDeadBatches' try.
type deadHeld struct {
	id     string
	m      PartialMeta
	closed *[]string
}

func (p *deadHeld) ID() string         { return p.id }
func (p *deadHeld) Meta() *PartialMeta { return &p.m }
func (p *deadHeld) WriteMeta() error   { return nil }
func (p *deadHeld) Close()             { *p.closed = append(*p.closed, p.id) }

// Only a staging partial no one holds is removed: one held by another process is left, and one
// whose info under the lock is no longer a batch's is released untouched.
func TestDropDeadBatches(t *testing.T) {
	var closed, removed []string
	parts := map[string]*deadHeld{
		"dead":  {id: "dead", m: PartialMeta{Batch: true}, closed: &closed},
		"other": {id: "other", m: PartialMeta{Name: "f"}, closed: &closed},
	}
	try := func(id string) (*deadHeld, error) {
		if p := parts[id]; p != nil {
			return p, nil
		}
		return nil, errors.New("held by another process")
	}
	DropDeadBatches([]string{"held", "dead", "other"}, try, func(p *deadHeld) { removed = append(removed, p.id) })
	if !slices.Equal(removed, []string{"dead"}) || !slices.Equal(closed, []string{"other"}) {
		t.Fatalf("removed %q, closed %q; want the dead batch removed, the other closed", removed, closed)
	}
}
