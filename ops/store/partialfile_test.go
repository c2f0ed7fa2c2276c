package store

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// TestPartialMetaFile: an info is one line of JSON whose fields keep the names stores already
// hold, read back as written; one that is not JSON, or names no upload, is damaged.
func TestPartialMetaFile(t *testing.T) {
	made := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := PartialMeta{Name: "a.bin", Size: 7, Created: made, Source: &PartialSource{Path: "/src/a.bin", Blake3: "ab", Size: 7}}
	const want = `{"name":"a.bin","size":7,"created":"2026-01-02T03:04:05Z","source":{"path":"/src/a.bin","blake3":"ab","size":7}}` + "\n"
	if got := string(m.File()); got != want {
		t.Fatalf("written %q, want %q", got, want)
	}
	for _, b := range []string{want, `{"name":"t","size":-1,"created":"2026-01-02T03:04:05Z","folder":true}`, `{"name":".batch","size":0,"batch":true}`} {
		if got, err := ParsePartialMeta([]byte(b)); err != nil || got.Source == nil && !got.Folder && !got.Batch {
			t.Fatalf("%s: read %+v, %v", b, got, err)
		}
	}
	if got, _ := ParsePartialMeta([]byte(want)); *got.Source != *m.Source || !got.Created.Equal(made) {
		t.Fatalf("read back %+v", got)
	}
	for _, b := range []string{`{"name":"a.bin"`, `{"name":"","size":1}`, `{"name":"a/b","size":1}`, `{"name":"a","size":-2}`} {
		if _, err := ParsePartialMeta([]byte(b)); !errors.Is(err, ErrPartialDamaged) {
			t.Fatalf("%s: %v, want damaged", b, err)
		}
	}
	for _, c := range []struct {
		m    PartialMeta
		want PartialOf
	}{
		{m, PartialOf{Name: "a.bin", Path: "/src/a.bin", Blake3: "ab", Streamed: true}},
		{PartialMeta{Name: "t", Folder: true, Source: &PartialSource{Path: "/t"}}, PartialOf{Name: "t", Path: "/t", Folder: true}},
		{PartialMeta{Name: ".b", Batch: true}, PartialOf{Name: ".b", Batch: true}},
		{PartialMeta{Name: "c"}, PartialOf{Name: "c"}},
	} {
		if got := c.m.Of(); got != c.want {
			t.Fatalf("%+v: of %+v, want %+v", c.m, got, c.want)
		}
	}
}

// takers is a PartialTaker of infos in a map: held, those another process holds; under, what an
// info says once locked where it changed since it was read.
type takers struct {
	metas  map[string]*PartialMeta
	held   map[string]bool
	under  map[string]*PartialMeta
	locked []string
	wrote  []string
	next   int
}

type heldMeta struct {
	t  *takers
	id string
	m  *PartialMeta
}

func (h *heldMeta) ID() string         { return h.id }
func (h *heldMeta) Meta() *PartialMeta { return h.m }
func (h *heldMeta) Close()             { h.t.held[h.id] = false }
func (h *heldMeta) WriteMeta() error {
	h.t.wrote = append(h.t.wrote, h.id)
	h.t.metas[h.id] = h.m
	return nil
}
func (t *takers) DropDeadBatches([]string) {}

func (t *takers) PartialIDs() ([]string, error) {
	var ids []string
	for id := range t.metas {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	slices.Reverse(ids) // newest first: the taker orders them
	return ids, nil
}

func (t *takers) PartialOf(id string) (PartialOf, bool, error) {
	m := t.metas[id]
	return m.Of(), m.Batch, nil
}

func (t *takers) TryLockPartial(id string) (*heldMeta, error) {
	if t.held[id] {
		return nil, errors.New("held")
	}
	t.held[id], t.locked = true, append(t.locked, id)
	m := *t.metas[id]
	if u := t.under[id]; u != nil {
		m = *u
	}
	return &heldMeta{t, id, &m}, nil
}

func (t *takers) BeginPartial(m PartialMeta) (*heldMeta, error) {
	t.next++
	id := "new" + string(rune('0'+t.next))
	t.metas[id], t.held[id] = &m, true
	return &heldMeta{t, id, &m}, nil
}

// TestTakePartial: a run takes up the first unfinished upload of its source (by path) that no one
// holds, checked again under the lock, and keys it to the source as it is now; a folder's the
// oldest first among all; none, it begins one, which the next run of the same source finds.
func TestTakePartial(t *testing.T) {
	src := func(path, sum string, size int64) *PartialSource {
		return &PartialSource{Path: path, Blake3: sum, Size: size}
	}
	tk := &takers{held: map[string]bool{"f1": true}, metas: map[string]*PartialMeta{
		"f1": {Name: "a.bin", Size: 5, Source: src("/a.bin", "old", 5)}, // held by another
		"f2": {Name: "a.bin", Size: 5, Source: src("/a.bin", "old", 5)}, // another source's once locked
		"f3": {Name: "a.bin", Size: 5, Source: src("/a.bin", "old", 5)},
		"f4": {Name: "a.bin", Size: 5, Source: src("/elsewhere", "new", 6)},
		"s1": {Name: "a.bin", Size: 6},                                           // a step-by-step upload's
		"d2": {Name: "t", Size: -1, Folder: true, Source: src("/t", "x", -1)},    // a folder's, newer
		"d1": {Name: "t", Size: -1, Folder: true, Source: src("/t", "x", -1)},    // the oldest
		"d0": {Name: "t", Size: -1, Folder: true, Source: src("/u", "x", -1)},    // another folder's
		"g1": {Name: "g.bin", Size: 3, Source: src("/g.bin", "s", 7)},            // its size not its source's
		"b1": {Name: ".batch", Size: 0, Batch: true, Source: src("/t", "x", -1)}, // no upload of its own
	}, under: map[string]*PartialMeta{"f2": {Name: "a.bin", Size: 5, Source: src("/b.bin", "old", 5)}}}
	var idx PartialIndex
	run := PartialOf{Name: "a.bin", Path: "/a.bin", Blake3: "new", Streamed: true}
	p, old, err := TakePartial(tk, &idx, run, 6)
	if err != nil || p.id != "f3" || *old != *src("/a.bin", "old", 5) {
		t.Fatalf("took %+v, old %+v, %v; want f3 of the old source", p, old, err)
	}
	if !slices.Equal(tk.wrote, []string{"f3"}) || *tk.metas["f3"].Source != *src("/a.bin", "new", 6) || tk.metas["f3"].Size != 6 {
		t.Fatalf("wrote %v: %+v; want f3 keyed to the source now", tk.wrote, tk.metas["f3"])
	}
	if tk.held["f2"] || slices.Contains(tk.locked, "f4") || slices.Contains(tk.locked, "s1") {
		t.Fatalf("locked %v, f2 held %v: want f2 let go, f4 and s1 never locked", tk.locked, tk.held["f2"])
	}
	// Every partial of the source held now: a new one, which the index then holds.
	if p, old, err = TakePartial(tk, &idx, run, 6); err != nil || old != nil || p.id != "new1" || !p.m.Of().Streamed || *p.m.Source != *src("/a.bin", "new", 6) {
		t.Fatalf("took %+v, old %+v, %v; want a new one of the source", p, old, err)
	}
	p.Close()
	tk.wrote = nil
	if p, old, err = TakePartial(tk, &idx, run, 6); err != nil || p.id != "new1" || *old != *src("/a.bin", "new", 6) || tk.wrote != nil {
		t.Fatalf("took %+v, old %+v, wrote %v, %v; want new1 again, its info as it was", p, old, tk.wrote, err)
	}
	tk.wrote = nil
	if p, _, err = TakePartial(tk, &idx, PartialOf{Name: "g.bin", Path: "/g.bin", Blake3: "s", Streamed: true}, 7); err != nil ||
		p.id != "g1" || !slices.Equal(tk.wrote, []string{"g1"}) || tk.metas["g1"].Size != 7 {
		t.Fatalf("took %+v, wrote %v, %v; want g1 at its source's size", p, tk.wrote, err)
	}
	folder := PartialOf{Name: "t", Path: "/t", Blake3: "x", Folder: true}
	if p, _, err = TakePartial(tk, &idx, folder, -1); err != nil || p.id != "d1" {
		t.Fatalf("took %+v, %v; want the oldest folder upload of /t", p, err)
	}
	if p, _, err = TakePartial(tk, &idx, folder, -1); err != nil || p.id != "d2" {
		t.Fatalf("took %+v, %v; want the next one", p, err)
	}
	if p, _, err = TakePartial(tk, &idx, folder, -1); err != nil || p.id != "new2" || !p.m.Folder {
		t.Fatalf("took %+v, %v; want a new folder upload", p, err)
	}
}
