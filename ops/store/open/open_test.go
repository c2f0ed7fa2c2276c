package open

import (
	"path/filepath"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store/internal/local"
	"github.com/attachctl/attachctl/ops/store/internal/s3"
)

// The constants this package writes out for its documentation are the backends' own.
func TestConstantsAreTheBackends(t *testing.T) {
	for _, c := range []struct {
		name      string
		ours, bes any
	}{
		{"DefaultS3ConnectTimeout", DefaultS3ConnectTimeout, s3.DefaultConnectTimeout},
		{"DefaultS3ReadTimeout", DefaultS3ReadTimeout, s3.DefaultReadTimeout},
		{"DirMode", DirMode, local.DirMode},
		{"FileMode", FileMode, local.FileMode},
		{"ReadOnlyMode", ReadOnlyMode, local.ReadOnlyMode},
	} {
		if c.ours != c.bes {
			t.Errorf("%s = %v, the backend's is %v", c.name, c.ours, c.bes)
		}
	}
}

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
