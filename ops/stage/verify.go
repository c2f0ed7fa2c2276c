package stage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops"
	"github.com/attachctl/attachctl/ops/store"
)

// now is the clock of verify's "at"; tests may replace it.
var now = time.Now

// VerifyRecord re-reads rec's source file at rec.Path (unless the path is a URI: the record names
// the upload alone) and its finished upload (through the backend's guarded open), and sets
// rec.Verified: ok when both hash to rec.Blake3 (or to each other, when the record carries no
// hash) and to the upload's recorded hash; blake3 is what was read from the upload. A difference
// is verify.mismatch and says which side changed; an upload not there is upload.missing; one that
// fails the guarded open is upload.unreadable; a source file not there is file.missing.
func VerifyRecord(ctx context.Context, b store.Backend, rec *manifest.Record, progress func(int64)) error {
	id, err := RecordID(b, rec)
	if err != nil {
		return err
	}
	if t, ok := folderUpload(ctx, b, id); ok || rec.Kind == manifest.KindFolder {
		if !ok {
			return fault.Errorf(fault.UploadMissing, "upload %s: not a finished folder upload in store %s", id, b.Location())
		}
		return verifyTree(ctx, t, rec, id, rec.Blake3, progress)
	}
	info, err := b.Info(ctx, id)
	if err != nil {
		return err
	}
	got, err := hashFinished(ctx, b, info, progress)
	if err != nil {
		return err
	}
	want := rec.Blake3
	var why []string
	if !strings.Contains(rec.Path, "://") {
		src, err := hashSource(rec.Path, progress)
		if err != nil {
			return err
		}
		if want == "" {
			want = src
		}
		if src != want {
			why = append(why, fmt.Sprintf("source %s hashes to %s, the record says %s: the source changed since it was uploaded", rec.Path, src, want))
		}
	} else if want == "" {
		want = info.Blake3
	}
	rec.Verified = &manifest.Verified{OK: true, Blake3: got, At: now().UTC().Format(time.RFC3339)}
	if got != info.Blake3 {
		why = append(why, fmt.Sprintf("upload %s hashes to %s, its metadata says %s: the upload changed", id, got, info.Blake3))
	} else if got != want {
		why = append(why, fmt.Sprintf("upload %s hashes to %s, the record says %s", id, got, want))
	}
	if len(why) > 0 {
		rec.Verified.OK = false
		return fault.Errorf(fault.VerifyMismatch, "%s", strings.Join(why, "; "))
	}
	return nil
}

// VerifyID checks one upload of the store against its recorded hash and the backend's own rules
// (store.Checker). It returns a record for the upload (path, name, size and blake3 from its
// metadata, upload, verified; an upload whose metadata cannot be read has only its folder as its
// path) and the error, if any.
func VerifyID(ctx context.Context, b store.Backend, id string, progress func(int64)) (*manifest.Record, error) {
	rec := &manifest.Record{Path: strings.TrimSuffix(store.FinishedName(b, id, ""), "/")}
	if err := store.ValidID(id); err != nil {
		return rec, err
	}
	info, err := b.Info(ctx, id)
	if err != nil {
		return rec, err
	}
	rec.Path, rec.Name, rec.Blake3 = store.FinishedName(b, id, info.Name), info.Name, info.Blake3
	rec.SetSize(info.Size)
	rec.Upload = &manifest.Upload{ID: id, Store: b.Location(), Path: rec.Path}
	if t, ok := folderUpload(ctx, b, id); ok {
		files, _, _ := t.FolderFiles(ctx, id)
		setFolder(rec, files)
		return rec, verifyTree(ctx, t, rec, id, "", progress)
	}
	if c := b.Features().Checker; c != nil {
		if err := c.Check(ctx, id); err != nil {
			return rec, err
		}
	}
	got, err := hashFinished(ctx, b, info, progress)
	if got != "" {
		rec.Verified = &manifest.Verified{OK: err == nil && got == info.Blake3, Blake3: got, At: now().UTC().Format(time.RFC3339)}
	}
	if err != nil {
		return rec, err
	}
	if got != info.Blake3 {
		return rec, fault.Errorf(fault.VerifyMismatch, "upload %s: %s hashes to %s, its metadata says %s", id, rec.Path, got, info.Blake3)
	}
	return rec, nil
}

// VerifyIDs is what verify --all checks: every finished upload of the store; what the store
// does not recognise as an upload (store.Recognize) is returned to be named, not failed.
func VerifyIDs(ctx context.Context, b store.Backend) ([]string, []store.Skip, error) {
	es, skipped, err := VerifyEntries(ctx, b)
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.ID
	}
	return ids, skipped, err
}

// Checked is one upload verify --all checks: its id and size.
type Checked struct {
	ID   string
	Size int64
}

// VerifyEntries is VerifyIDs with each upload's size, from the one listing.
func VerifyEntries(ctx context.Context, b store.Backend) ([]Checked, []store.Skip, error) {
	l, err := b.List(ctx)
	if err != nil {
		return nil, nil, err
	}
	var es []Checked
	for _, e := range l.Entries {
		if e.Finished {
			es = append(es, Checked{e.ID, e.Size})
		}
	}
	return es, l.Skipped, nil
}

// hashFinished hashes a finished upload read through the guarded open, checking its size too.
func hashFinished(ctx context.Context, b store.Backend, info *store.Info, progress func(int64)) (string, error) {
	r, err := b.Open(ctx, info.ID, info.Name)
	if err != nil {
		return "", err
	}
	defer r.Close()
	sum, n, err := ops.Hash(r, progress)
	if err != nil {
		return "", fault.AsError(err, fault.UploadUnreadable)
	}
	if n != info.Size {
		return sum, fault.Errorf(fault.VerifyMismatch, "upload %s: %s has %d bytes, its metadata says %d", info.ID, store.FinishedName(b, info.ID, info.Name), n, info.Size)
	}
	return sum, nil
}

// hashSource hashes the record's own file, following a link as sniff does for a named path.
func hashSource(path string, progress func(int64)) (string, error) {
	f, err := openSource(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || fault.CodeOf(err) == fault.FileMissing {
			return "", fault.Errorf(fault.FileMissing, "%s: no such file", path)
		}
		return "", err
	}
	defer f.Close()
	sum, _, err := ops.Hash(f, progress)
	if err != nil {
		return "", fault.Errorf(fault.FileUnreadable, "%s: %v", path, err)
	}
	return sum, nil
}
