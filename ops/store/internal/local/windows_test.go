//go:build windows

package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// On Windows the local store is refused at New, with the code the SPEC gives a store that cannot
// be used (store.unreachable) and words that say why and what to use instead; nothing is made.
func TestNewRefusesOnWindows(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "chat-1")
	b, err := New(dir, LimitsWait(0))
	if b != nil || err == nil {
		t.Fatalf("New = %v, %v; want a refusal", b, err)
	}
	if code := fault.CodeOf(err); code != fault.StoreUnreachable {
		t.Fatalf("code %q, want %q (%v)", code, fault.StoreUnreachable, err)
	}
	for _, want := range []string{dir, "the local store needs a POSIX system", "use an s3:// store"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not say %q", err.Error(), want)
		}
	}
	if _, _, err := store.StoresUnder(dir, UnderRoot); fault.CodeOf(err) != fault.StoreUnreachable || !strings.Contains(err.Error(), "use an s3:// store") {
		t.Errorf("StoresUnder: %v, want store.unreachable saying to use an s3:// store", err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("%s: %v; New made something", dir, err)
	}
}
