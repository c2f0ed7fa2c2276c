package store

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
)

// markRig is a MarkCheck over MapObjects whose top shows top (once there is no mark), and what it
// was asked.
type markRig struct {
	o      *MapObjects
	c      *MarkCheck
	top    []TopEntry
	looks  int
	nested []bool // the marks flag of each Nested call
	inside bool   // Nested with marks refuses: a store's mark above
}

func newMarkRig(unsafe bool) *markRig {
	r := &markRig{o: &MapObjects{}}
	r.c = &MarkCheck{M: ObjectMark{O: r.o, Loc: "mem://b/p", At: "mem://b/p/.attachctl/store"}, Unsafe: unsafe,
		Look: func(context.Context) (Seen, error) { r.looks++; return Seen{Names: r.top}, nil },
		Nested: func(_ context.Context, marks bool) error {
			r.nested = append(r.nested, marks)
			if marks && r.inside {
				return fault.Errorf(fault.StoreNotStore, "inside another store")
			}
			return nil
		}}
	return r
}

func (r *markRig) mark(t *testing.T) []byte {
	t.Helper()
	o, err := r.o.Get(context.Background(), markKey())
	if errors.Is(err, ErrNoObject) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	return o.Body
}

// An empty prefix is a store not made yet for readers, and nothing is written; an upload makes it,
// asking Nested with marks first, and its mark says the conditional writes were checked (or, by
// the user's word, not); once marked, the answer is kept without another read.
func TestMarkCheckMakes(t *testing.T) {
	ctx := context.Background()
	for _, unsafe := range []bool{false, true} {
		r := newMarkRig(unsafe)
		if ok, err := r.c.Check(ctx, false); ok || err != nil || r.mark(t) != nil {
			t.Fatalf("an empty prefix read: %v, %v, mark %q", ok, err, r.mark(t))
		}
		if err := r.c.Holds(ctx, dropID); fault.CodeOf(err) != fault.UploadMissing || !strings.Contains(err.Error(), "the store is empty") {
			t.Fatalf("an id of an empty prefix: %v", err)
		}
		if err := r.c.Holds(ctx, "nope"); fault.CodeOf(err) != fault.UploadInvalid {
			t.Fatalf("no id: %v", err)
		}
		r.nested = nil
		if ok, err := r.c.Check(ctx, true); !ok || err != nil {
			t.Fatalf("made: %v, %v", ok, err)
		}
		if len(r.nested) != 2 || r.nested[0] || !r.nested[1] {
			t.Fatalf("Nested asked %v, want without marks then with", r.nested)
		}
		line := map[bool]string{false: CondChecked, true: CondUnchecked}[unsafe]
		if m := r.mark(t); !bytes.HasPrefix(m, []byte(MarkLine)) || !bytes.Contains(m, []byte(line)) {
			t.Fatalf("unsafe %v: the mark %q, want it to say %q", unsafe, m, line)
		}
		looks := r.looks
		r.o.Delete(ctx, markKey(), "") // not read again: kept
		if ok, err := r.c.Check(ctx, false); !ok || err != nil || r.looks != looks {
			t.Fatalf("after the mark: %v, %v, %d looks", ok, err, r.looks-looks)
		}
		if err := r.c.Holds(ctx, dropID); err != nil {
			t.Fatalf("an id of a store: %v", err)
		}
	}
}

// A prefix with an earlier version's store (its internal folder, or an upload's) and no mark is a
// store to read, not marked by a read and marked by an upload; one that holds anything else is
// store.notStore, read or written, and so is one inside another store's uploads: no mark is
// written to either.
func TestMarkCheckRefuses(t *testing.T) {
	ctx := context.Background()
	r := newMarkRig(false)
	r.top = []TopEntry{{Name: dropID, Dir: true}}
	if ok, err := r.c.Check(ctx, false); !ok || err != nil || r.mark(t) != nil {
		t.Fatalf("an unmarked store read: %v, %v, mark %q", ok, err, r.mark(t))
	}
	if ok, err := r.c.Check(ctx, true); !ok || err != nil || r.mark(t) == nil {
		t.Fatalf("an unmarked store written: %v, %v, mark %q", ok, err, r.mark(t))
	}
	for _, create := range []bool{false, true} {
		r := newMarkRig(false)
		r.top = []TopEntry{{Name: "photos", Dir: true}}
		if ok, err := r.c.Check(ctx, create); ok || fault.CodeOf(err) != fault.StoreNotStore || r.mark(t) != nil {
			t.Fatalf("create %v: not a store: %v, %v, mark %q", create, ok, err, r.mark(t))
		}
	}
	r = newMarkRig(false)
	r.inside = true
	if ok, err := r.c.Check(ctx, true); ok || fault.CodeOf(err) != fault.StoreNotStore || r.mark(t) != nil {
		t.Fatalf("inside another store: %v, %v, mark %q", ok, err, r.mark(t))
	}
}
