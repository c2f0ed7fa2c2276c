package store

import (
	"bytes"
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
