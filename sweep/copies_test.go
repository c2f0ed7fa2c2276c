package sweep

import (
	"testing"
	"time"

	"github.com/attachctl/attachctl/ops/store/storetest"
)

// Which working copies go with a run: the removed, and after a sweep what the store no longer
// holds, but never the copy of an upload that is there, finished, when asked.
func TestCopyDoomed(t *testing.T) {
	s := storetest.NewMem("mem://copies")
	now := time.Now()
	kept := memFinished(t, s, "kept.txt", []byte("kept"), now)
	swept := memFinished(t, s, "swept.txt", []byte("swept"), now)
	unfinished := memPartial(t, s, "late.txt", []byte("late"), now)
	const never = "01900000-0000-7000-8000-000000000000" // an id this store never had
	removed := map[string]bool{swept: true}
	if _, err := Remove(bg, s, []string{swept}, 0, false, func(Removed) error { return nil }); err != nil {
		t.Fatal(err)
	}

	sweepDoomed, err := CopyDoomed(bg, s, removed, true)
	if err != nil {
		t.Fatal(err)
	}
	rmDoomed, err := CopyDoomed(bg, s, removed, false)
	if err != nil {
		t.Fatal(err)
	}
	// The unfinished upload finishes after the listing: a resolve may have made its copy already.
	if _, err := s.Finish(bg, unfinished, -1, ""); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what, id  string
		sweep, rm bool
	}{
		{"kept", kept, false, false},
		{"removed", swept, true, true},
		{"never there", never, true, false},         // gone from the store: only a sweep takes its copy
		{"finished late", unfinished, false, false}, // finished since the listing: the last look keeps it
	} {
		if got := sweepDoomed(c.id); got != c.sweep {
			t.Errorf("after a sweep, the copy of the %s upload: doomed %v, want %v", c.what, got, c.sweep)
		}
		if got := rmDoomed(c.id); got != c.rm {
			t.Errorf("after rm, the copy of the %s upload: doomed %v, want %v", c.what, got, c.rm)
		}
	}
}
