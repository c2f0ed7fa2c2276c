package store

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
)

// TestTreeVerifyFaults: the verify.mismatch of a folder upload carries, file by file, what was
// found (store.TreeMismatch) beside its words, which stay as they were: a file missing, changed,
// unreadable or added, and what a backend found beside the folder. A name that holds another's
// words ("a is missing" beside "a") is told apart, which reading the message could not do.
func TestTreeVerifyFaults(t *testing.T) {
	ctx := context.Background()
	files := map[string]string{"a": "alpha", "a is missing": "words", "b.txt": "bravo", "c.txt": "charlie"}
	m := newMemTrees(2)
	ti, err := UploadTree(ctx, m, memTreeSource(files), TreeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m.finished[ti.ID]["f/a is missing"] = []byte("other words")
	delete(m.finished[ti.ID], "f/b.txt")
	m.finished[ti.ID]["f/\"q\".txt"] = []byte("new")
	_, err = VerifyTreeOf(ctx, m, ti.ID, nil)
	var tm *TreeMismatch
	if fault.CodeOf(err) != fault.VerifyMismatch || !errors.As(err, &tm) {
		t.Fatalf("verify: %v, want a verify.mismatch with its TreeMismatch", err)
	}
	want := []TreeFault{{Rel: "a is missing", What: TreeChanged}, {Rel: "b.txt", What: TreeMissing}, {Rel: `"q".txt`, What: TreeAdded}}
	if len(tm.Faults) != len(want) {
		t.Fatalf("faults %+v, want %+v", tm.Faults, want)
	}
	for i, f := range tm.Faults {
		if f.Rel != want[i].Rel || f.What != want[i].What || !strings.Contains(err.Error(), f.Text) {
			t.Errorf("fault %d: %+v, want %+v with its words in %q", i, f, want[i], err)
		}
	}
	if !strings.Contains(err.Error(), `: folder proj: a is missing changed (`) || !strings.Contains(err.Error(), `; b.txt is missing; "\"q\".txt" was added`) {
		t.Errorf("the message is not what it was: %v", err)
	}

	// Through CheckTree: a file that cannot be read, and what a backend found beside the folder.
	broken := errors.New("input/output error")
	c := TreeCheck{Jobs: 1, Extra: []TreeFault{{What: TreeBeside, Text: "k/x: unexpected object beside the folder"}},
		Open: func(_ context.Context, rel string) (io.ReadCloser, error) {
			if rel == "c.txt" {
				return io.NopCloser(&failing{broken}), nil
			}
			return io.NopCloser(strings.NewReader(files[rel])), nil
		},
		ReadErr: func(rel string, _ int64, err error) error {
			return fault.Errorf(fault.UploadUnreadable, "%s: %w", rel, err)
		}}
	ti.Files = []TreeFile{ti.Files[0], ti.Files[3]} // a, c.txt
	err = CheckTree(ctx, ti, c, nil)
	if !errors.As(err, &tm) || len(tm.Faults) != 2 || tm.Faults[0].Rel != "c.txt" || tm.Faults[0].What != TreeUnreadable ||
		tm.Faults[1].Rel != "" || tm.Faults[1].What != TreeBeside || !errors.Is(err, fault.VerifyMismatch) {
		t.Errorf("CheckTree: %v; faults %+v", err, tm)
	}
}

type failing struct{ err error }

func (f *failing) Read([]byte) (int, error) { return 0, f.err }
