package s3

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/s3/s3test"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestListRequests: a listing of a store holding every kind of entry (finished file and folder
// uploads, used and not, an unfinished step-by-step upload, an unfinished folder upload with its
// info, the files of one without, a multipart upload with no info) gives each its entry and makes
// one listing of the prefix, one of the multipart uploads, and per upload only what its kind
// needs: no request per unfinished folder upload beyond its info, its size summed over the
// listing already made.
func TestListRequests(t *testing.T) {
	srv := s3test.Start(t)
	s := newStore(t, srv)
	bg := context.Background()
	dir := t.TempDir()
	var files []string
	for i := range 4 {
		rec := &manifest.Record{Path: randomFile(t, dir, fmt.Sprintf("f%d.bin", i), 100+int64(i), uint64(i))}
		if err := s.UploadRecord(bg, rec, UploadOptions{}); err != nil {
			t.Fatal(err)
		}
		files = append(files, rec.Upload.ID)
	}
	if err := s.MarkUsed(bg, files[:2], time.Now()); err != nil {
		t.Fatal(err)
	}
	folder := folderRec(t, "proj", map[string]string{"a/1": "one", "b/2": "two", "3": "three"})
	if err := s.UploadRecord(bg, folder, UploadOptions{}); err != nil {
		t.Fatal(err)
	}
	// An unfinished folder upload: what a stage killed before its metadata and listing leaves,
	// its info kept.
	half := folderRec(t, "half", map[string]string{"x/1": "12345", "2": "1234567"})
	if err := s.UploadRecord(bg, half, UploadOptions{}); err != nil {
		t.Fatal(err)
	}
	hid := half.Upload.ID
	if err := s.deleteKeys(bg, []string{s.treeKey(hid), s.treeMetaKey(hid), s.usedKey(hid)}); err != nil {
		t.Fatal(err)
	}
	if err := s.putJSON(bg, s.infoKey(hid), partialInfo{Name: "half", Size: -1, Made: nowString(), Kind: store.KindFolder}, true); err != nil {
		t.Fatal(err)
	}
	// The files of a folder upload with neither info nor listing.
	left := folderRec(t, "left", map[string]string{"l/1": "1234"})
	if err := s.UploadRecord(bg, left, UploadOptions{}); err != nil {
		t.Fatal(err)
	}
	lid := left.Upload.ID
	if err := s.deleteKeys(bg, []string{s.treeKey(lid), s.treeMetaKey(lid), s.usedKey(lid)}); err != nil {
		t.Fatal(err)
	}
	// An unfinished step-by-step upload, and a multipart upload with no info.
	pid, err := s.Begin(bg, "step.bin", 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(bg, pid, 0, strings.NewReader("12345")); err != nil {
		t.Fatal(err)
	}
	const bare = "01900000-0000-7000-8000-0000000000b0"
	key := s.key(bare, "big.bin")
	if _, err := s.client.CreateMultipartUpload(bg, &awss3.CreateMultipartUploadInput{Bucket: &s.Bucket, Key: &key}); err != nil {
		t.Fatal(err)
	}

	c := countRequests(s)
	l, err := s.List(bg)
	if err != nil {
		t.Fatal(err)
	}
	got := c.take()
	if len(l.Skipped) != 0 {
		t.Fatalf("skipped %+v", l.Skipped)
	}
	type want struct {
		name     string
		size     int64
		finished bool
		used     bool
	}
	wants := map[string]want{
		files[0]: {"f0.bin", 100, true, true}, files[1]: {"f1.bin", 101, true, true},
		files[2]: {"f2.bin", 102, true, false}, files[3]: {"f3.bin", 103, true, false},
		folder.Upload.ID: {"proj", 11, true, false},
		hid:              {"half", 12, false, true}, lid: {"left", 4, false, true},
		pid: {"step.bin", 5, false, true}, bare: {"big.bin", 0, false, true},
	}
	if len(l.Entries) != len(wants) {
		t.Fatalf("%d entries, want %d: %+v", len(l.Entries), len(wants), l.Entries)
	}
	for _, e := range l.Entries {
		w, ok := wants[e.ID]
		if !ok || e.Name != w.name || e.Size != w.size || e.Finished != w.finished || e.LastUsed.IsZero() == w.used || e.Made.IsZero() {
			t.Errorf("entry %+v, want %+v", e, w)
		}
	}
	// One listing of the prefix, and one of the chunks of the step-by-step upload; a HEAD of each
	// finished file upload and of the folder upload's listing; a GET of each marker, of the
	// folder upload's metadata and of each info.
	if got["ListObjectsV2"] != 2 || got["ListMultipartUploads"] != 1 || got["HeadObject"] != 5 || got["GetObject"] != 2+1+2 {
		t.Fatalf("requests of a listing: %v", got)
	}
}
