package mem

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

var ctx = context.Background()

func put(t *testing.T, s *Store, name string, data []byte) string {
	t.Helper()
	id, err := s.Begin(ctx, name, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, id, 0, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Finish(ctx, id, -1, ""); err != nil {
		t.Fatal(err)
	}
	return id
}

// The hooks a test needs: the clock dates uploads, Hold makes an unfinished upload busy (and no
// sweep removes it), Plant leaves something a listing skips and a sweep keeps.
func TestHooks(t *testing.T) {
	s := New("mem://hooks")
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	s.Now = func() time.Time { return old }
	id := put(t, s, "a.txt", []byte("a"))
	pid, err := s.Begin(ctx, "p.bin", -1)
	if err != nil {
		t.Fatal(err)
	}
	s.Now = nil
	s.Plant("stray.txt")
	release, err := s.Hold(pid)
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Entries) != 2 || len(l.Skipped) != 1 || l.Skipped[0].Path != "mem://hooks/stray.txt" {
		t.Fatalf("listing %+v", l)
	}
	for _, e := range l.Entries {
		if !e.Made.Equal(old) || e.Busy != (e.ID == pid) {
			t.Fatalf("entry %+v: want made %v, busy only %s", e, old, pid)
		}
	}
	sw, err := s.Sweep(ctx, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]store.Outcome{}
	err = sw.Remove(ctx, l.Entries, func(store.Entry) bool { return true }, func(e store.Entry, o store.Outcome, err error) error {
		got[e.ID] = o
		return err
	})
	sw.Close()
	if err != nil || got[id] != store.Removed || got[pid] != store.Kept {
		t.Fatalf("sweep: %v, %v; want %s removed and the busy %s kept", got, err, id, pid)
	}
	release()
	if l, _ := s.List(ctx); len(l.Entries) != 1 || l.Entries[0].Busy || len(l.Skipped) != 1 {
		t.Fatalf("after the sweep and the release: %+v", l)
	}
	// Something planted under an upload id is named as the other backends name it (the listing's
	// rules, store.ListOn): the id's folder, no upload of this store.
	const foreign = "01900000-0000-7000-8000-0000000000ff"
	s.Plant(foreign + "/x.bin")
	l, err = s.List(ctx)
	want := store.Skip{Path: "mem://hooks/" + foreign, Why: "not an upload of this store: upload " + foreign + ": no metadata"}
	if err != nil || len(l.Entries) != 1 || len(l.Skipped) != 2 || l.Skipped[0] != want {
		t.Fatalf("a planted object under an upload id: %+v, %v; want %+v", l, err, want)
	}
}

// Limits hold in Begin, in Write of an open upload and in Stream, as on the other backends.
func TestLimits(t *testing.T) {
	s := New("mem://limits")
	if err := s.Features().Limiter.SetLimits(ctx, store.Limits{MaxFile: 10, MaxFiles: 2}); err != nil {
		t.Fatal(err)
	}
	if err := s.Features().Limiter.SetLimits(ctx, store.Limits{MaxFile: 11}); fault.CodeOf(err) != fault.UploadInvalid {
		t.Fatalf("other limits again: %v", err)
	}
	if _, err := s.Begin(ctx, "big", 11); fault.CodeOf(err) != fault.UploadTooLarge {
		t.Fatalf("begin over max-file: %v", err)
	}
	id, err := s.Begin(ctx, "open", -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, id, 0, strings.NewReader(strings.Repeat("x", 11))); fault.CodeOf(err) != fault.UploadTooLarge {
		t.Fatalf("write past max-file: %v", err)
	}
	put(t, s, "b", []byte("b"))
	if _, err := s.Begin(ctx, "c", 1); fault.CodeOf(err) != fault.StoreFull {
		t.Fatalf("a third upload against max-files 2: %v", err)
	}
	if err := s.Abort(ctx, id); err != nil {
		t.Fatal(err)
	}
	put(t, s, "c", []byte("c"))
}

// EditFile changes a finished upload's bytes behind its metadata: what verify is for.
func TestEditFile(t *testing.T) {
	s := New("mem://edit")
	id := put(t, s, "a.txt", []byte("abc"))
	if err := s.EditFile(id, []byte("abd")); err != nil {
		t.Fatal(err)
	}
	r, err := s.Open(ctx, id, "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var b bytes.Buffer
	b.ReadFrom(r)
	if b.String() != "abd" || r.Info().Blake3 != hexSum([]byte("abc")) {
		t.Fatalf("read %q, info %+v", b.String(), r.Info())
	}
}

// memSource is a source file held in memory.
type memSource struct{ *bytes.Reader }

func (memSource) Name() string     { return "a.txt" }
func (memSource) Unchanged() error { return nil }

// A finished upload of the same bytes and name whose bytes changed behind the store's back is
// not named again, neither when the stage looks before it writes nor when it publishes: the
// source is uploaded afresh under a new id, which is how a user repairs it, and the new upload
// is the one found after.
func TestStreamAvoidsDamaged(t *testing.T) {
	s := New("mem://damaged")
	data := []byte("abc")
	src := store.Source{Path: "/a.txt", Name: "a.txt", Size: 3, Blake3: hexSum(data)}
	stream := func() string {
		t.Helper()
		info, err := s.Stream(ctx, src, memSource{bytes.NewReader(data)}, store.StreamOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return info.ID
	}
	id := stream()
	if again := stream(); again != id {
		t.Fatalf("the intact upload %s not named again: %s", id, again)
	}
	if err := s.EditFile(id, []byte("abd")); err != nil {
		t.Fatal(err)
	}
	fresh := stream()
	if fresh == id {
		t.Fatalf("the damaged upload %s named again", id)
	}
	if again := stream(); again != fresh {
		t.Fatalf("the new upload %s not named again: %s", fresh, again)
	}
}

// An upload of the same bytes and name that another worker finished while this one wrote is
// named at the publish only when it is still intact (store.NameAgain), as the local store reads
// it back first: a damaged one is avoided, and this upload is published under its own id.
func TestStreamPublishNamesOnlyIntact(t *testing.T) {
	for _, damaged := range []bool{false, true} {
		s := New("mem://publish")
		data := []byte("abc")
		src := store.Source{Path: "/a.txt", Name: "a.txt", Size: 3, Blake3: hexSum(data)}
		other := ""
		opts := store.StreamOptions{Progress: func(int64) {
			if other != "" {
				return
			}
			info, err := s.Stream(ctx, src, memSource{bytes.NewReader(data)}, store.StreamOptions{})
			if err != nil {
				t.Fatal(err)
			}
			other = info.ID
			if damaged {
				if err := s.EditFile(other, []byte("abd")); err != nil {
					t.Fatal(err)
				}
			}
		}}
		info, err := s.Stream(ctx, src, memSource{bytes.NewReader(data)}, opts)
		if err != nil || other == "" {
			t.Fatalf("damaged %v: %v, %v (the other worker's upload %q)", damaged, info, err, other)
		}
		if named := info.ID == other; named == damaged {
			t.Fatalf("damaged %v: the upload %s finished meanwhile named: %v", damaged, other, named)
		}
		l, err := s.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{false: 1, true: 2}[damaged]; len(l.Entries) != want {
			t.Fatalf("damaged %v: %d uploads, want %d: %+v", damaged, len(l.Entries), want, l.Entries)
		}
	}
}
