package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// hookObjects is MapObjects with a hook before each Get (another process at work meanwhile) and
// an error every call gives when set (a server that answers badly).
type hookObjects struct {
	MapObjects
	beforeGet    func(key string)
	beforeDelete func(key string)
	err          error
}

func (h *hookObjects) Delete(ctx context.Context, key, version string) error {
	if h.beforeDelete != nil {
		hook := h.beforeDelete
		h.beforeDelete = nil
		hook(key)
	}
	return h.MapObjects.Delete(ctx, key, version)
}

func (h *hookObjects) Get(ctx context.Context, key string) (Object, error) {
	if h.err != nil {
		return Object{}, h.err
	}
	if h.beforeGet != nil {
		h.beforeGet(key)
	}
	return h.MapObjects.Get(ctx, key)
}

func (h *hookObjects) Put(ctx context.Context, key, version string, body []byte) (string, error) {
	if h.err != nil {
		return "", h.err
	}
	return h.MapObjects.Put(ctx, key, version, body)
}

// failingPuts is Objects whose every Put under prefix fails as a server's odd answer does.
type failingPuts struct {
	Objects
	prefix string
}

func (o failingPuts) Put(ctx context.Context, key, version string, body []byte) (string, error) {
	if strings.HasPrefix(key, o.prefix) {
		return "", fmt.Errorf("a server's odd answer")
	}
	return o.Objects.Put(ctx, key, version, body)
}

// The primitive's conditions, as every engine here relies on them: create-only, over a version,
// a delete on a version, a listing by prefix.
func TestMapObjectsConditions(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		run  func(o *MapObjects) error
		want error
	}{
		{"create-only over nothing is taken", func(o *MapObjects) error {
			_, err := o.Put(ctx, "k", "", []byte("a"))
			return err
		}, nil},
		{"create-only over an object is refused", func(o *MapObjects) error {
			o.Put(ctx, "k", "", []byte("a"))
			_, err := o.Put(ctx, "k", "", []byte("b"))
			return err
		}, ErrObjectChanged},
		{"over the version read is taken", func(o *MapObjects) error {
			v, _ := o.Put(ctx, "k", "", []byte("a"))
			_, err := o.Put(ctx, "k", v, []byte("b"))
			return err
		}, nil},
		{"over a version replaced since is refused", func(o *MapObjects) error {
			v, _ := o.Put(ctx, "k", "", []byte("a"))
			o.Put(ctx, "k", v, []byte("b"))
			_, err := o.Put(ctx, "k", v, []byte("c"))
			return err
		}, ErrObjectChanged},
		{"over a version of an object gone is refused", func(o *MapObjects) error {
			v, _ := o.Put(ctx, "k", "", []byte("a"))
			o.Delete(ctx, "k", "")
			_, err := o.Put(ctx, "k", v, []byte("b"))
			return err
		}, ErrObjectChanged},
		{"a delete on a version replaced since is refused", func(o *MapObjects) error {
			v, _ := o.Put(ctx, "k", "", []byte("a"))
			o.Put(ctx, "k", v, []byte("b"))
			if err := o.Delete(ctx, "k", v); err != nil {
				return err
			}
			return errors.New("deleted")
		}, ErrObjectChanged},
		{"a delete of nothing is no error", func(o *MapObjects) error { return o.Delete(ctx, "k", "7") }, nil},
		{"a read of nothing", func(o *MapObjects) error {
			_, err := o.Get(ctx, "k")
			return err
		}, ErrNoObject},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.run(new(MapObjects)); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	var o MapObjects
	for _, k := range []string{"a/1", "a/2", "ab/3", "b/1"} {
		o.Put(ctx, k, "", []byte(k))
	}
	if got, _ := o.List(ctx, "a/"); !reflect.DeepEqual(got, []string{"a/1", "a/2"}) {
		t.Fatalf("listed %v under a/, want a/1 and a/2", got)
	}
}

// A reservation is created create-only: one there already is another's, refused; one dropped
// between the listing and its read is none; one dropped twice is no error.
func TestObjectReserver(t *testing.T) {
	ctx := context.Background()
	o := &hookObjects{}
	r := ObjectReserver{O: o, Loc: "mem://x"}
	if err := r.PutReservation(ctx, idA, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := r.PutReservation(ctx, idA, []byte("two")); fault.CodeOf(err) != fault.UploadInvalid {
		t.Fatalf("a second reservation of %s: %v, want upload.invalid", idA, err)
	}
	if err := r.PutReservation(ctx, idB, []byte("b")); err != nil {
		t.Fatal(err)
	}
	o.beforeGet = func(key string) {
		if strings.HasSuffix(key, idB) {
			r.DropReservation(ctx, idB) // its upload published meanwhile
		}
	}
	got, err := r.Reservations(ctx)
	if want := map[string][]byte{idA: []byte("one")}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("reservations %q (%v), want %q", got, err, want)
	}
	if err := r.DropReservation(ctx, idB); err != nil {
		t.Fatalf("a reservation dropped twice: %v", err)
	}
	// An answer the backend could not code is the reservations' store.unreachable; one it coded
	// keeps its code.
	o.err = errors.New("a server's odd answer")
	if err := r.PutReservation(ctx, idC, nil); fault.CodeOf(err) != fault.StoreUnreachable || !strings.Contains(err.Error(), "reservation "+idC) {
		t.Fatalf("an uncoded error: %v, want store.unreachable naming the reservation", err)
	}
	o.err = fault.Errorf("", "store mem://x: odd")
	if _, err := r.Reservations(ctx); fault.CodeOf(err) != fault.StoreUnreachable {
		t.Fatalf("a backend's error without a code: %v, want store.unreachable", err)
	}
	o.err = fault.Errorf(fault.UploadUnreadable, "store mem://x: odd")
	if _, err := r.Reservations(ctx); fault.CodeOf(err) != fault.UploadUnreadable {
		t.Fatalf("a backend's coded error: %v, want its code kept", err)
	}
}

// The mark is replaced only over the version read: a mark changed since is another's store init,
// refused, and left as it is.
func TestObjectMark(t *testing.T) {
	ctx := context.Background()
	o := new(MapObjects)
	m := ObjectMark{O: o, Loc: "mem://x"}
	if b, v, err := m.ReadMark(ctx); b != nil || v != "" || err != nil {
		t.Fatalf("no mark: %q %q %v, want none", b, v, err)
	}
	if err := m.ReplaceMark(ctx, []byte("one\n"), ""); err != nil {
		t.Fatal(err)
	}
	_, v, _ := m.ReadMark(ctx)
	if err := m.ReplaceMark(ctx, []byte("two\n"), v); err != nil {
		t.Fatal(err)
	}
	if err := m.ReplaceMark(ctx, []byte("three\n"), v); fault.CodeOf(err) != fault.UploadInvalid || !strings.Contains(err.Error(), "changed") {
		t.Fatalf("over a mark changed since it was read: %v, want upload.invalid", err)
	}
	if err := m.ReplaceMark(ctx, []byte("again\n"), ""); fault.CodeOf(err) != fault.UploadInvalid {
		t.Fatalf("a new mark over one made meanwhile: %v, want upload.invalid", err)
	}
	if b, _, _ := m.ReadMark(ctx); string(b) != "two\n" {
		t.Fatalf("the mark is %q after the refusals, want two", b)
	}
}

// A use marker is read for its kind and time; one that is not attachctl's is a use at its
// object's time; each kind's size is what a listing tells it by.
func TestReadUseMark(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		kind string // written by WriteUseMark; "": body is
		body string
		want UseMark
		size int
	}{
		{"none", "", "", UseMark{}, 0},
		{"used", "used", "", UseMark{Exists: true, At: at}, UsedMarkSize},
		{"tombstone", "tombstone", "", UseMark{Exists: true, Tombstone: true, At: at}, TombstoneMarkSize},
		{"foreign", "", "touched by hand\n", UseMark{Exists: true, Foreign: true}, 0},
		{"foreign kind", "", "kept 2026-12-04T08:00:00.000000000Z 0123456789abcdef\n", UseMark{Exists: true, Foreign: true}, 0},
		{"no time", "", "used yesterday 0123456789abcdef\n", UseMark{Exists: true, Foreign: true}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := new(MapObjects)
			switch {
			case tc.kind != "":
				if _, err := WriteUseMark(ctx, o, idA, UseMark{}, tc.kind, at, ErrUseRaced); err != nil {
					t.Fatal(err)
				}
			case tc.body != "":
				o.Put(ctx, idA+"/"+UsedName, "", []byte(tc.body))
			}
			got, err := ReadUseMark(ctx, o, idA)
			if err != nil {
				t.Fatal(err)
			}
			obj, _ := o.Get(ctx, idA+"/"+UsedName)
			want := tc.want
			want.Version = obj.Version
			if want.Foreign {
				want.At = obj.Modified
			}
			if got != want {
				t.Fatalf("read %+v, want %+v", got, want)
			}
			if tc.size != 0 && len(obj.Body) != tc.size {
				t.Fatalf("a %s marker of %d bytes, want %d: a listing tells it by its size", tc.kind, len(obj.Body), tc.size)
			}
		})
	}
}

// A marker is replaced only over the one read: a write that lost is the caller's raced. A use
// that wrote where there was none is checked, and its undo removes only the marker it wrote.
func TestWriteUseOn(t *testing.T) {
	ctx := context.Background()
	at := time.Now()
	o := new(MapObjects)
	checked := 0
	check := func() error { checked++; return nil }
	// Where there was none: checked, and undone.
	chk, undo, err := WriteUseOn(ctx, o, idA, UseMark{}, at, check)
	if err != nil || chk == nil || undo == nil {
		t.Fatalf("a first use: check %v, undo %v, %v; want both", chk != nil, undo != nil, err)
	}
	m, _ := ReadUseMark(ctx, o, idA)
	undo()
	if got, _ := ReadUseMark(ctx, o, idA); got.Exists {
		t.Fatalf("the undone marker is still there: %+v", got)
	}
	// Undone after another use replaced it: the other's stays.
	_, undo, _ = WriteUseOn(ctx, o, idA, UseMark{}, at, check)
	m, _ = ReadUseMark(ctx, o, idA)
	if _, _, err := WriteUseOn(ctx, o, idA, m, at, check); err != nil {
		t.Fatal(err)
	}
	undo()
	if got, _ := ReadUseMark(ctx, o, idA); !got.Exists {
		t.Fatalf("an undo removed another use's marker")
	}
	// Over the marker read: proved, nothing to check.
	m, _ = ReadUseMark(ctx, o, idA)
	if chk, _, err := WriteUseOn(ctx, o, idA, m, at, check); err != nil || chk != nil {
		t.Fatalf("over the marker read: check %v, %v; want none", chk != nil, err)
	}
	// Over a marker read before another wrote (a sweep's tombstone, another use): raced.
	if _, err := WriteUseMark(ctx, o, idA, m, "tombstone", at, ErrSweepKept); err != ErrSweepKept {
		t.Fatalf("a tombstone over a marker replaced since: %v, want ErrSweepKept", err)
	}
	if _, _, err := WriteUseOn(ctx, o, idA, UseMark{}, at, check); err != ErrUseRaced {
		t.Fatalf("a first use where another wrote one: %v, want ErrUseRaced", err)
	}
	if checked != 0 {
		t.Fatalf("check called %d times by WriteUseOn, want by the engine only", checked)
	}
}

// A note is written create-only: of two runs that start at once the one that finds the note
// written is told so (ErrNoteTaken) and drops what it began; an error the backend gives without a
// code is the note's upload.unreadable.
func TestNotesStartOverObjects(t *testing.T) {
	f, n, _ := noteRig()
	ctx := context.Background()
	key := n.Key("x.bin", 10, noteSum)
	other := newTestID(t)
	f.beforePut = func(key string) { f.put(t, key, other) }
	begin := func(id string) (*fakePartial, error) { return &fakePartial{}, nil }
	if _, _, err := n.Start(ctx, key, "", "x.bin", 10, begin); err != ErrNoteTaken || len(f.dropped) != 1 {
		t.Fatalf("a note written meanwhile: %v, %d dropped; want ErrNoteTaken, this run's dropped", err, len(f.dropped))
	}
	n.O = failingPuts{Objects: n.O, prefix: noteKey("")}
	if _, _, err := n.Start(ctx, key, "", "x.bin", 10, begin); fault.CodeOf(err) != fault.UploadUnreadable || len(f.dropped) != 2 {
		t.Fatalf("a note that cannot be written: %v, %d dropped; want upload.unreadable, dropped", err, len(f.dropped))
	}
}

// ignoring is MapObjects on a server that ignores a condition: create-only, or over a version.
type ignoring struct {
	MapObjects
	newOnes, versions bool
}

func (o *ignoring) Put(ctx context.Context, key, version string, body []byte) (string, error) {
	if o.newOnes && version == "" || o.versions && version != "" {
		version = AnyVersion
	}
	return o.MapObjects.Put(ctx, key, version, body)
}

// A server is checked for each condition; the probe goes after.
func TestProbeConditions(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name              string
		o                 *ignoring
		newTaken, matched bool
	}{
		{"honours both", &ignoring{}, false, false},
		{"ignores create-only", &ignoring{newOnes: true}, true, false},
		{"ignores a version", &ignoring{versions: true}, false, true},
		{"ignores both", &ignoring{newOnes: true, versions: true}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, m, err := ProbeConditions(ctx, tc.o)
			if err != nil || n != tc.newTaken || m != tc.matched {
				t.Fatalf("create-only ignored %v, a version ignored %v (%v); want %v, %v", n, m, err, tc.newTaken, tc.matched)
			}
			if keys, _ := tc.o.List(ctx, ""); len(keys) != 0 {
				t.Fatalf("left %v", keys)
			}
		})
	}
	bad := &hookObjects{err: errors.New("a server's odd answer")}
	if _, _, err := ProbeConditions(ctx, bad); fault.CodeOf(err) != fault.StoreUnreachable {
		t.Fatalf("a probe that cannot be written: %v, want store.unreachable", err)
	}
}

// The mark says its store's conditional writes were checked, written over the version read; one
// written meanwhile is as good, and a damaged one is left for its owner.
func TestObjectMarkStamp(t *testing.T) {
	ctx := context.Background()
	o := new(MapObjects)
	m := ObjectMark{O: o, Loc: "mem://x", At: "mem://x/.attachctl/store"}
	limited := MarkText(Limits{MaxFiles: 3})
	if err := m.Stamp(ctx, nil, "", "checked\n"); err != nil {
		t.Fatal(err)
	}
	b, v, _ := m.ReadMark(ctx)
	if !strings.Contains(string(b), "checked\n") || !strings.HasPrefix(string(b), MarkLine) {
		t.Fatalf("a new store's mark %q: want its first line and the check's", b)
	}
	o.Put(ctx, markKey(), v, limited) // store init meanwhile
	if err := m.Stamp(ctx, b, v, "again\n"); err != nil {
		t.Fatalf("over a mark written meanwhile: %v, want as good", err)
	}
	if b, v, _ = m.ReadMark(ctx); string(b) != string(limited) {
		t.Fatalf("the mark written meanwhile is %q, want it kept", b)
	}
	if err := m.Stamp(ctx, b, v, "checked\n"); err != nil {
		t.Fatal(err)
	}
	if b, v, _ = m.ReadMark(ctx); !strings.Contains(string(b), "checked\n") || !strings.Contains(string(b), `"maxFiles":3`) {
		t.Fatalf("stamped mark %q: want the check's line and the limits kept", b)
	}
	damaged := []byte(MarkLine + limitsPrefix + "{\n")
	o.Put(ctx, markKey(), v, damaged)
	_, v, _ = m.ReadMark(ctx)
	if err := m.Stamp(ctx, damaged, v, "checked\n"); err != nil {
		t.Fatal(err)
	}
	if b, _, _ = m.ReadMark(ctx); string(b) != string(damaged) {
		t.Fatalf("a damaged mark became %q, want it left", b)
	}
}

// The info of an unfinished upload: none is upload.missing, one that is no info is
// upload.unreadable; a new one is written create-only, a fix over whatever is there.
func TestInfoObject(t *testing.T) {
	ctx := context.Background()
	o := new(MapObjects)
	if _, err := ReadInfo[*fakePartial](ctx, o, idA, "mem://x"); fault.CodeOf(err) != fault.UploadMissing {
		t.Fatalf("no info: %v, want upload.missing", err)
	}
	if err := WriteInfo(ctx, o, idA, &infoPartial{Name: "a.bin"}, ""); err != nil {
		t.Fatal(err)
	}
	if p, err := ReadInfo[*infoPartial](ctx, o, idA, "mem://x"); err != nil || p.Name != "a.bin" {
		t.Fatalf("read %+v (%v), want a.bin", p, err)
	}
	if err := WriteInfo(ctx, o, idA, &infoPartial{Name: "b.bin"}, ""); fault.CodeOf(err) != fault.UploadUnreadable {
		t.Fatalf("a new info over one: %v, want refused", err)
	}
	if err := WriteInfo(ctx, o, idA, &infoPartial{Name: "b.bin"}, AnyVersion); err != nil {
		t.Fatalf("a fix: %v", err)
	}
	if p, _ := ReadInfo[*infoPartial](ctx, o, idA, "mem://x"); p.Name != "b.bin" {
		t.Fatalf("fixed info names %q, want b.bin", p.Name)
	}
	for _, body := range []string{"null", "{}", `{"name":"../x"}`, "not json"} {
		o.Put(ctx, infoKey(idB), AnyVersion, []byte(body))
		if p, err := ReadInfo[*infoPartial](ctx, o, idB, "mem://x"); fault.CodeOf(err) != fault.UploadUnreadable || p != nil {
			t.Fatalf("info %s: %+v, %v; want upload.unreadable", body, p, err)
		}
	}
}

type infoPartial struct {
	Name string `json:"name"`
}

func (p *infoPartial) Of() PartialOf { return PartialOf{Name: p.Name} }

// A tombstone left alone goes; a used marker, or a foreign object, stays; so does one replaced
// since it was read.
func TestDropTombstone(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		kind  string
		body  string
		stays bool
	}{
		{"tombstone", "tombstone", "", false},
		{"used", "used", "", true},
		{"foreign", "", strings.Repeat("x", TombstoneMarkSize), true},
		{"none", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &hookObjects{}
			if tc.kind != "" {
				WriteUseMark(ctx, o, idA, UseMark{}, tc.kind, time.Now(), ErrUseRaced)
			} else if tc.body != "" {
				o.Put(ctx, useKey(idA), "", []byte(tc.body))
			}
			if err := DropTombstone(ctx, o, idA); err != nil {
				t.Fatal(err)
			}
			if m, _ := ReadUseMark(ctx, o, idA); m.Exists != tc.stays {
				t.Fatalf("marker there %v, want %v", m.Exists, tc.stays)
			}
		})
	}
	o := &hookObjects{}
	WriteUseMark(ctx, o, idA, UseMark{}, "tombstone", time.Now(), ErrUseRaced)
	o.beforeDelete = func(string) {
		m, _ := ReadUseMark(ctx, o, idA)
		WriteUseMark(ctx, o, idA, m, "tombstone", time.Now(), ErrUseRaced) // another sweep's, since
	}
	if err := DropTombstone(ctx, o, idA); err != nil {
		t.Fatal(err)
	}
	if m, _ := ReadUseMark(ctx, o, idA); !m.Exists {
		t.Fatalf("a tombstone written after the one read was dropped")
	}
}

// A store's conditional writes are checked once, on its first use, and the mark says so: a
// server that ignores one is refused, naming it, with nothing stamped; the user's word skips
// the check, and the mark says that instead, which a use without that word does not take for a
// check; a mark that says they were checked is not checked again.
func TestObjectMarkCheckConditions(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		o     *ignoring
		names string
	}{
		{"ignores create-only", &ignoring{newOnes: true}, "If-None-Match: *"},
		{"ignores a version", &ignoring{versions: true}, "If-Match"},
	} {
		m := ObjectMark{O: tc.o, Loc: "mem://x", At: "mem://x/.attachctl/store"}
		err := m.CheckConditions(ctx, nil, "", false)
		if fault.CodeOf(err) != fault.StoreUnreachable || !strings.Contains(err.Error(), "ignores "+tc.names) {
			t.Fatalf("%s: %v, want store.unreachable naming %s", tc.name, err, tc.names)
		}
		if b, _, _ := m.ReadMark(ctx); b != nil {
			t.Fatalf("%s: marked %q", tc.name, b)
		}
		if err := m.CheckConditions(ctx, nil, "", true); err != nil {
			t.Fatalf("%s, unsafe: %v", tc.name, err)
		}
		b, v, _ := m.ReadMark(ctx)
		if !strings.Contains(string(b), CondUnchecked) || strings.Contains(string(b), CondChecked) {
			t.Fatalf("%s, unsafe: mark %q, want it to say the check was skipped", tc.name, b)
		}
		if err := m.CheckConditions(ctx, b, v, true); err != nil {
			t.Fatal(err)
		}
		if _, v2, _ := m.ReadMark(ctx); v2 != v {
			t.Fatalf("%s, unsafe again: the mark was written again", tc.name)
		}
		if err := m.CheckConditions(ctx, b, v, false); fault.CodeOf(err) != fault.StoreUnreachable {
			t.Fatalf("%s, a skipped check then a use without the word: %v, want checked and refused", tc.name, err)
		}
	}
	o := new(MapObjects)
	m := ObjectMark{O: o, Loc: "mem://x", At: "mem://x/.attachctl/store"}
	o.Put(ctx, markKey(), "", []byte(MarkLine)) // an earlier version's mark
	b, v, _ := m.ReadMark(ctx)
	if err := m.CheckConditions(ctx, b, v, false); err != nil {
		t.Fatal(err)
	}
	b, v, _ = m.ReadMark(ctx)
	if !strings.HasPrefix(string(b), MarkLine+CondChecked) {
		t.Fatalf("an old mark checked: %q, want it to say so", b)
	}
	if err := m.CheckConditions(ctx, b, v, false); err != nil {
		t.Fatal(err)
	}
	if _, v2, _ := m.ReadMark(ctx); v2 != v {
		t.Fatal("a checked mark was checked and written again")
	}
}
