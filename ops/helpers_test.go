package ops

import (
	"path/filepath"
	"testing"

	"github.com/attachctl/attachctl/manifest"
)

// testStore is a new store in a test's temporary folder, named like a chat.
func testStore(t testing.TB) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "chat-1"), true)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// wantCode fails the test unless err carries code; code "" wants no error at all.
func wantCode(t *testing.T, err error, code manifest.Code) {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if got := manifest.CodeOf(err); got != code {
		t.Fatalf("error %v: code %q, want %q", err, got, code)
	}
}
