//go:build unix

package local

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/attachctl/attachctl/ops/store"
)

func TestStoresUnder(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	mark := func(dir string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, InternalDir), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, InternalDir, store.MarkName), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mark(filepath.Join(root, "chat-1"))
	mark(filepath.Join(root, "chat-1", "inner")) // inside a store: never looked for
	mark(filepath.Join(root, "team", "chat-2"))
	if err := os.MkdirAll(filepath.Join(root, "old", InternalDir, partialDir), 0o700); err != nil { // an earlier version's store
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "plain", "deeper"), 0o700)
	mark(outside)
	if err := os.Symlink(outside, filepath.Join(root, "linked")); err != nil { // not followed
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "plain", InternalDir), 0o700) // an internal folder without a mark is no store

	got, skipped, err := store.StoresUnder(root, UnderRoot)
	if err != nil || len(skipped) > 0 {
		t.Fatalf("StoresUnder: %v, skipped %v", err, skipped)
	}
	want := []string{filepath.Join(root, "chat-1"), filepath.Join(root, "old"), filepath.Join(root, "team", "chat-2")}
	if !slices.Equal(got, want) {
		t.Errorf("StoresUnder = %q, want %q", got, want)
	}
	// ROOT itself a store: that store alone.
	if got, _, _ := store.StoresUnder(filepath.Join(root, "chat-1"), UnderRoot); !slices.Equal(got, want[:1]) {
		t.Errorf("StoresUnder(a store) = %q, want %q", got, want[:1])
	}
	if _, _, err := store.StoresUnder(filepath.Join(root, "nothing"), UnderRoot); err == nil {
		t.Error("StoresUnder of a folder that does not exist: no error")
	}
}

// TestMarkThroughLinkedInternal: a folder whose internal folder is a link to a marked one is a
// store for the nested-store refusal (isStoreMark follows that link: a store is not made inside
// it), and none for StoresUnder (which follows no link). One rule of what marks a store, read
// two ways.
func TestMarkThroughLinkedInternal(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	must(t, os.WriteFile(filepath.Join(elsewhere, store.MarkName), nil, 0o600))
	outer := filepath.Join(root, "outer")
	must(t, os.MkdirAll(filepath.Join(outer, "sub"), 0o700))
	must(t, os.Symlink(elsewhere, filepath.Join(outer, InternalDir)))
	if err := notNested(filepath.Join(outer, "sub", "inner")); err == nil {
		t.Error("a store inside a folder whose internal folder is a link to a mark: not refused")
	}
	if got, _, err := store.StoresUnder(root, UnderRoot); err != nil || len(got) != 0 {
		t.Errorf("StoresUnder = %q, %v; want none (a linked internal folder is not followed)", got, err)
	}
	// The mark itself, or an earlier version's partial folder, a link: no store either way.
	plain := filepath.Join(root, "plain")
	must(t, os.MkdirAll(filepath.Join(plain, InternalDir), 0o700))
	must(t, os.Symlink(filepath.Join(elsewhere, store.MarkName), filepath.Join(plain, InternalDir, store.MarkName)))
	must(t, os.Symlink(elsewhere, filepath.Join(plain, InternalDir, partialDir)))
	if err := notNested(filepath.Join(plain, "inner")); err != nil {
		t.Errorf("inside a folder whose mark is a link: %v", err)
	}
	if isStoreMark(plain) {
		t.Error("a linked mark or partial folder marks a store")
	}
}
