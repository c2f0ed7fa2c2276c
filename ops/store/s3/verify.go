package s3

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops"
)

// VerifyRecord re-reads the upload rec names (a streamed GET) and the record's source file, when
// the record's path is a file and not the upload itself, and sets rec.Verified: ok when the
// upload hashes to its metadata's BLAKE3 and to the record's (or to the source's, when the record
// carries none), and the source to the record's. A difference is verify.mismatch and says which
// side changed.
func (s *Store) VerifyRecord(ctx context.Context, rec *manifest.Record, progress func(int64)) error {
	if rec.Upload == nil {
		return manifest.Errorf(manifest.UploadMissing, "%s: the record names no upload", rec.Path)
	}
	id := rec.Upload.ID
	if rec.Upload.Store != s.URI {
		return manifest.Errorf(manifest.UploadMissing, "upload %s: in store %s, not %s", id, rec.Upload.Store, s.URI)
	}
	info, err := s.Info(ctx, id)
	if err != nil {
		return err
	}
	if strings.HasPrefix(rec.Path, "s3://") { // a record made from the id alone: name it fully
		rec.Path, rec.Name = s.FinishedURI(id, info.Name), info.Name
		rec.Upload.Path = rec.Path
		rec.SetSize(info.Size)
	}
	r, err := s.Open(ctx, id, info.Name)
	if err != nil {
		return err
	}
	got, n, err := ops.Hash(r, progress)
	r.Close()
	if err != nil {
		return manifest.AsError(err, manifest.UploadUnreadable)
	}
	want := rec.Blake3
	var why []string
	if !strings.HasPrefix(rec.Path, "s3://") {
		f, err := os.Open(rec.Path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return manifest.Errorf(manifest.FileMissing, "%s: no such file", rec.Path)
			}
			return manifest.Errorf(manifest.FileUnreadable, "%s: %v", rec.Path, err)
		}
		src, _, err := ops.Hash(f, progress)
		f.Close()
		if err != nil {
			return manifest.Errorf(manifest.FileUnreadable, "%s: %v", rec.Path, err)
		}
		if want == "" {
			want = src
		}
		if src != want {
			why = append(why, fmt.Sprintf("the source %s changed: it hashes to %s, the record says %s", rec.Path, src, want))
		}
	}
	if want == "" {
		want = info.Blake3
	}
	rec.Verified = &manifest.Verified{OK: true, Blake3: got, At: time.Now().UTC().Format(time.RFC3339)}
	if got != info.Blake3 || n != info.Size {
		why = append(why, fmt.Sprintf("the upload %s changed: its %d bytes hash to %s, its metadata says %s", id, n, got, info.Blake3))
	} else if got != want {
		why = append(why, fmt.Sprintf("the upload %s hashes to %s, the record says %s", id, got, want))
	}
	if len(why) > 0 {
		rec.Verified.OK = false
		return manifest.Errorf(manifest.VerifyMismatch, "%s", strings.Join(why, "; "))
	}
	return nil
}
