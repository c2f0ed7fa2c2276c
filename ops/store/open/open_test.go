package open

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store/internal/local"
	"github.com/attachctl/attachctl/ops/store/location"
)

// The constants this package writes out for its documentation are the backends' own (an s3://
// location's, read by package location).
func TestConstantsAreTheLocations(t *testing.T) {
	for _, c := range []struct {
		name      string
		ours, bes any
	}{
		{"DefaultS3ConnectTimeout", DefaultS3ConnectTimeout, location.DefaultS3ConnectTimeout},
		{"DefaultS3ReadTimeout", DefaultS3ReadTimeout, location.DefaultS3ReadTimeout},
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

// A folder named by a b3sum line is file.unreadable and a file named inside a store folder
// that is no upload is opened as any file: one rule on every system (Windows answered
// file.notRegular for a folder, in a copy of its own).
func TestForCheckFolder(t *testing.T) {
	dir := t.TempDir()
	if r, err := ForCheck(dir); r != nil || fault.CodeOf(err) != fault.FileUnreadable {
		t.Fatalf("ForCheck of a folder: %v, %v; want nil and %s", r, err, fault.FileUnreadable)
	}
	id := "0190c4d2-0000-7000-8000-000000000001"
	path := filepath.Join(dir, id, "a.txt")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := ForCheck(path)
	if err != nil {
		t.Fatalf("ForCheck of a file in a folder that is no store: %v", err)
	}
	r.Close()
}

// An s3:// location with credentials or a port in it is refused before anything is sent: the
// credentials and the endpoint come from the AWS settings, and the bucket is the host alone (a
// port was taken into the bucket's name, credentials silently dropped).
func TestStoreS3NotALocation(t *testing.T) {
	for _, c := range []struct{ uri, says string }{
		{"s3://key:secret@bucket/p", "AWS_ACCESS_KEY_ID"},
		{"s3://bucket:9000/p", "AWS_ENDPOINT_URL_S3"},
	} {
		b, err := Store(context.Background(), c.uri, Options{})
		if fault.CodeOf(err) != fault.UploadInvalid || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), "secret") {
			t.Errorf("Store(%q) = %v, %v; want upload.invalid naming %s, without the secret", c.uri, b, err, c.says)
		}
	}
}
