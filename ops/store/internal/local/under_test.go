//go:build unix

package local

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestStoresUnder(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	mark := func(dir string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, InternalDir), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, InternalDir, markName), nil, 0o600); err != nil {
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

	got, skipped, err := StoresUnder(root)
	if err != nil || len(skipped) > 0 {
		t.Fatalf("StoresUnder: %v, skipped %v", err, skipped)
	}
	want := []string{filepath.Join(root, "chat-1"), filepath.Join(root, "old"), filepath.Join(root, "team", "chat-2")}
	if !slices.Equal(got, want) {
		t.Errorf("StoresUnder = %q, want %q", got, want)
	}
	// ROOT itself a store: that store alone.
	if got, _, _ := StoresUnder(filepath.Join(root, "chat-1")); !slices.Equal(got, want[:1]) {
		t.Errorf("StoresUnder(a store) = %q, want %q", got, want[:1])
	}
	if _, _, err := StoresUnder(filepath.Join(root, "nothing")); err == nil {
		t.Error("StoresUnder of a folder that does not exist: no error")
	}
}
