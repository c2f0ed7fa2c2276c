package store

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTreeDirs checks that every folder of a tree is named once, the top too, each before the
// folders above it (a folder's names are made durable before its parent's).
func TestTreeDirs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
		want  []string
	}{
		{"none", nil, nil},
		{"files at the top", []string{"a", "b"}, []string{"."}},
		{"nested", []string{"a/b/c", "a/b/d", "a/e", "f"}, []string{"a/b", "a", "."}},
		{"siblings", []string{"a/x", "b/y/z"}, []string{"a", ".", "b/y", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := make([]TreeFile, len(tc.files))
			for i, rel := range tc.files {
				files[i] = TreeFile{Rel: rel}
			}
			if got := TreeDirs(files); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestTreeMetaEncode checks that the metadata a backend writes is one line of JSON that reads
// back as the same metadata.
func TestTreeMetaEncode(t *testing.T) {
	const id = "0190c4d2-0000-7000-8000-000000000001"
	m := &TreeMeta{Info: Info{ID: id, Name: "docs", Size: 3, Blake3: strings.Repeat("ab", 32), Made: time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)},
		Kind: KindFolder, Files: 2, Sizes: []int64{1, 2}}
	b := m.Encode()
	if !bytes.HasSuffix(b, []byte("}\n")) || bytes.Count(b, []byte("\n")) != 1 {
		t.Fatalf("not one line: %q", b)
	}
	got, err := ParseTreeMeta(id, b, MetaName)
	if err != nil {
		t.Fatal(err)
	}
	if got.Info != m.Info || got.Kind != m.Kind || got.Files != m.Files || !slices.Equal(got.Sizes, m.Sizes) {
		t.Errorf("read back %+v, wrote %+v", got, m)
	}
}

// nestedWrite is an unfinished tree listed folder by folder (no FlatList), as the local store
// lists one: only what dropStale asks of a TreeWrite.
type nestedWrite struct {
	TreeWrite
	files   map[string]int64
	removed []string
}

func (w *nestedWrite) ReadDir(_ context.Context, dir string) ([]TreeEntry, error) {
	seen := map[string]bool{}
	var es []TreeEntry
	for rel, size := range w.files {
		if dir != "" {
			var ok bool
			if rel, ok = strings.CutPrefix(rel, dir+"/"); !ok {
				continue
			}
		}
		name, _, sub := strings.Cut(rel, "/")
		switch {
		case seen[name]:
		case sub:
			es = append(es, TreeEntry{Name: name, Dir: true})
		default:
			es = append(es, TreeEntry{Name: name, File: true, Size: size})
		}
		seen[name] = true
	}
	slices.SortFunc(es, func(a, b TreeEntry) int { return strings.Compare(a.Name, b.Name) })
	return es, nil
}

func (w *nestedWrite) Remove(_ context.Context, rels []string) error {
	w.removed = append(w.removed, rels...)
	return nil
}

// TestDropStaleNested: on a backend that lists a tree folder by folder, a resume keeps every
// folder on the way to a file the source still holds (however deep), enters it, and removes only
// what the source no longer holds: a file, and a folder none of its files is in, whole.
func TestDropStaleNested(t *testing.T) {
	w := &nestedWrite{files: map[string]int64{"a/b/c/keep": 4, "a/old": 1, "a/b/gone": 2, "d/x/y": 3, "e": 5, "f/g": 6}}
	src := &TreeSource{Files: []TreeFile{{Rel: "a/b/c/keep", Size: 4}, {Rel: "e", Size: 5}, {Rel: "f", Size: 6}}}
	held, err := dropStale(context.Background(), w, src, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a/b/gone", "a/old", "d", "f"}; !slices.Equal(w.removed, want) {
		t.Errorf("removed %q, want %q", w.removed, want)
	}
	if len(held) != 2 || held["a/b/c/keep"] != 4 || held["e"] != 5 {
		t.Errorf("held %v", held)
	}
}
