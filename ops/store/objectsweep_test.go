package store

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// removalRun is ObjectRemoval over objects in memory, with every deletion, note dropped and
// multipart abort written to log in its order; failing names keys whose deletion fails, and
// lagging keeps the listing listed after its deletion (a server whose listings lag).
type removalRun struct {
	o       MapObjects
	log     []string
	failing map[string]bool
	lagging bool
	note    string // the listing's note ("": a file upload, no listing)
}

func (f *removalRun) removal() ObjectRemoval {
	return ObjectRemoval{O: &f.o,
		Walk: func(ctx context.Context, id string) ([]FolderObject, error) {
			keys, _ := f.o.List(ctx, id+"/")
			var objs []FolderObject
			for _, k := range keys {
				objs = append(objs, FolderObject{Name: strings.TrimPrefix(k, id+"/")})
			}
			if f.lagging && !slices.Contains(keys, id+"/"+TreeListName) {
				objs = append(objs, FolderObject{Name: TreeListName})
			}
			return objs, nil
		},
		Delete: func(ctx context.Context, keys []string) error {
			for _, k := range keys {
				if f.failing[k] {
					return errors.New("refused")
				}
				f.log = append(f.log, "delete "+k)
				f.o.Delete(ctx, k, "")
			}
			return nil
		},
		HeadTree: func(ctx context.Context, id string) (*ListingHead, error) {
			if _, err := f.o.Get(ctx, id+"/"+TreeListName); err != nil {
				return nil, nil
			}
			return &ListingHead{Note: f.note}, nil
		},
		DropNote:       func(_ context.Context, note, id string) { f.log = append(f.log, "note "+note+" of "+id) },
		DropMultiparts: func(_ context.Context, id string) error { f.log = append(f.log, "multiparts of "+id); return nil },
	}
}

func (f *removalRun) put(t *testing.T, keys ...string) {
	for _, k := range keys {
		if _, err := f.o.Put(context.Background(), k, AnyVersion, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *removalRun) left() []string {
	keys, _ := f.o.List(context.Background(), "")
	return keys
}

// A finished file upload: its object goes first, its marker last; a marker that cannot be
// deleted leaves the upload gone all the same, and an object that cannot be deleted leaves the
// marker (a tombstone) for the next sweep.
func TestDropFinishedFile(t *testing.T) {
	ctx := context.Background()
	f := &removalRun{}
	f.put(t, "u1/a.txt", "u1/.used", "u2/b.txt")
	if err := f.removal().DropFinished(ctx, "u1", "a.txt", &ObjectDoomed{}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"delete u1/a.txt", "delete u1/.used"}; !slices.Equal(f.log, want) {
		t.Fatalf("deleted %q, want %q", f.log, want)
	}
	if !slices.Equal(f.left(), []string{"u2/b.txt"}) {
		t.Fatalf("left %q", f.left())
	}

	f = &removalRun{failing: map[string]bool{"u1/.used": true}}
	f.put(t, "u1/a.txt", "u1/.used")
	if err := f.removal().DropFinished(ctx, "u1", "a.txt", &ObjectDoomed{}); err != nil {
		t.Fatalf("a marker left is no failure: %v", err)
	}
	f = &removalRun{failing: map[string]bool{"u1/a.txt": true}}
	f.put(t, "u1/a.txt", "u1/.used")
	if err := f.removal().DropFinished(ctx, "u1", "a.txt", &ObjectDoomed{}); err == nil || len(f.log) != 0 {
		t.Fatalf("an object not deleted: %v, deleted %q; want the error and the marker kept", err, f.log)
	}
}

// A finished folder upload: its source note first, then its listing (from then on it is no
// finished upload), its files, its multipart uploads, its marker last.
func TestDropFinishedTree(t *testing.T) {
	ctx := context.Background()
	f := &removalRun{note: "abcd"}
	f.put(t, "u1/.tree.b3", "u1/.upload.json", "u1/.used", "u1/d/a.txt", "u1/d/b/c.txt")
	if err := f.removal().DropFinished(ctx, "u1", "d", &ObjectDoomed{Tree: true}); err != nil {
		t.Fatal(err)
	}
	want := []string{"note abcd of u1", "delete u1/.tree.b3", "delete u1/.upload.json", "delete u1/d/a.txt",
		"delete u1/d/b/c.txt", "multiparts of u1", "delete u1/.used"}
	if !slices.Equal(f.log, want) {
		t.Fatalf("removal\n%q, want\n%q", f.log, want)
	}
	if len(f.left()) != 0 {
		t.Fatalf("left %q", f.left())
	}

	// The listing still listed after its deletion: an error, the rest and the tombstone kept.
	f = &removalRun{note: "abcd", lagging: true}
	f.put(t, "u1/.tree.b3", "u1/.used", "u1/d/a.txt")
	err := f.removal().DropFinished(ctx, "u1", "d", &ObjectDoomed{Tree: true})
	if fault.CodeOf(err) != fault.UploadUnreadable || !slices.Equal(f.left(), []string{"u1/.used", "u1/d/a.txt"}) {
		t.Fatalf("a listing still listed: %v, left %q; want upload.unreadable and the files and marker kept", err, f.left())
	}
}

// The objects of an unfinished folder upload: all but the marker, its multipart uploads, the
// marker last; one finished meanwhile (its listing there) is left whole.
func TestDropTreeObjects(t *testing.T) {
	ctx := context.Background()
	f := &removalRun{}
	f.put(t, "u1/.used", "u1/d/a.txt", "u2/.used")
	listed, err := f.removal().DropTreeObjects(ctx, "u1")
	if err != nil || listed {
		t.Fatal(listed, err)
	}
	if want := []string{"delete u1/d/a.txt", "multiparts of u1", "delete u1/.used"}; !slices.Equal(f.log, want) {
		t.Fatalf("removal %q, want %q", f.log, want)
	}
	f = &removalRun{}
	f.put(t, "u1/.used", "u1/d/a.txt", "u1/.tree.b3")
	if listed, err := f.removal().DropTreeObjects(ctx, "u1"); err != nil || !listed || len(f.log) != 0 {
		t.Fatalf("finished meanwhile: %v %v, removal %q; want it left, reported finished", listed, err, f.log)
	}
}

// The re-check of a finished upload reads its marker: its last use, or a tombstone, whose
// decision stands; the tombstone is written over the marker read only, and once.
func TestRecheckAndDoomMarked(t *testing.T) {
	ctx := context.Background()
	f := &removalRun{}
	r := f.removal()
	rr, err := r.RecheckMarked(ctx, "u1", false)
	if err != nil || rr.Decided || !rr.Used.IsZero() {
		t.Fatalf("no marker: %+v, %v; want never used, not decided", rr, err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := WriteUseMark(ctx, &f.o, "u1", UseMark{}, "used", at, ErrUseRaced); err != nil {
		t.Fatal(err)
	}
	rr, err = r.RecheckMarked(ctx, "u1", true)
	if err != nil || rr.Decided || !rr.Used.Equal(at) || !rr.Note.(*ObjectDoomed).Tree {
		t.Fatalf("used marker: %+v, %v; want used at %v, a folder upload", rr, err, at)
	}
	// A use that writes between the re-check and the tombstone wins: Kept.
	if _, err := WriteUseMark(ctx, &f.o, "u1", rr.Note.(*ObjectDoomed).M, "used", at.Add(time.Hour), ErrUseRaced); err != nil {
		t.Fatal(err)
	}
	if err := r.DoomMarked(ctx, "u1", rr.Note.(*ObjectDoomed)); !errors.Is(err, ErrSweepKept) {
		t.Fatalf("a use won the race: %v, want ErrSweepKept", err)
	}
	rr, _ = r.RecheckMarked(ctx, "u1", false)
	if err := r.DoomMarked(ctx, "u1", rr.Note.(*ObjectDoomed)); err != nil {
		t.Fatal(err)
	}
	rr, err = r.RecheckMarked(ctx, "u1", false)
	if err != nil || !rr.Decided || !rr.Used.IsZero() {
		t.Fatalf("tombstone: %+v, %v; want decided", rr, err)
	}
	v := rr.Note.(*ObjectDoomed).M.Version
	if err := r.DoomMarked(ctx, "u1", rr.Note.(*ObjectDoomed)); err != nil {
		t.Fatal(err)
	}
	if m, _ := ReadUseMark(ctx, &f.o, "u1"); m.Version != v {
		t.Fatalf("a tombstone written again: version %s, was %s", m.Version, v)
	}
}
