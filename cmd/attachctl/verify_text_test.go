//go:build unix

package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store/open"
)

// TestUnreadableS3UploadNamesNoModes: an S3 upload that is upload.unreadable is told as its
// error says, never as "permissions changed": its objects have no modes. The command used to
// look for the upload's folder on this machine by the record's path, and so told a chmod for
// an S3 record whenever a folder of that name was found here (filepath.Dir makes
// s3://bucket/... the relative path s3:/bucket/...); the store alone says what its modes are.
func TestUnreadableS3UploadNamesNoModes(t *testing.T) {
	const id = "01935c4e-8a31-7b6c-9e2f-0c1d2e3f4a5b"
	t.Chdir(t.TempDir())
	if err := os.MkdirAll(filepath.Join("s3:", "bucket", "chat", id), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join("s3:", "bucket", "chat", id), 0o755) // whatever the umask: not the local store's 0700
	b, err := open.Store(context.Background(), "s3://bucket/chat", open.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Features().Moder != nil {
		t.Fatal("the S3 store declares modes")
	}
	e := fault.Errorf(fault.UploadUnreadable, "upload %s: s3://bucket/chat/%s/a.txt: access denied", id, id)
	for _, rec := range []*manifest.Record{
		{Path: "a.txt", Upload: &manifest.Upload{ID: id, Store: "s3://bucket/chat", Path: "s3://bucket/chat/" + id + "/a.txt"}, Error: e},
		{Path: "s3://bucket/chat/" + id, Error: e}, // verify --all, metadata unreadable
	} {
		if got := failureInWords(context.Background(), b, rec); got != e.Error() {
			t.Errorf("%s: %q, want the error as it is: %q", rec.Path, got, e.Error())
		}
	}
}
