package open

import (
	"path/filepath"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
)

// A path ForCheck cannot open is a nil ReadCloser with the error, not a nil *os.File wrapped in a
// non-nil interface that a caller checking r != nil would close.
func TestForCheckMissing(t *testing.T) {
	r, err := ForCheck(filepath.Join(t.TempDir(), "missing"))
	if err == nil || r != nil {
		t.Fatalf("ForCheck of a missing path: %v, %v; want nil and an error", r, err)
	}
	if fault.CodeOf(err) == "" {
		t.Fatalf("error without a code: %v", err)
	}
}
