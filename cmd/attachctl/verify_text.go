package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// failureInWords is verify --format text's line for a failed record: what is wrong, in words a
// person can act on. A mismatch says which side changed: the upload (its bytes no longer hash to
// what was recorded when it was finished: corrupted, re-upload) or the source file (edited after
// the upload was made: the upload is intact). s may be nil when the store could not be opened.
func failureInWords(ctx context.Context, b store.Backend, rec *manifest.Record) string {
	e := rec.Error
	switch e.Code {
	case fault.VerifyMismatch:
		if rec.Upload == nil {
			break
		}
		if rec.Kind == manifest.KindFolder {
			return folderFailure(rec)
		}
		if b == nil || uploadChanged(ctx, b, rec) {
			return fmt.Sprintf("%s: upload corrupted: its bytes no longer match the BLAKE3 recorded when it was finished (upload %s); repair: %s",
				manifest.Quote(rec.Upload.Path), rec.Upload.ID, repairCommand(rec))
		}
		return fmt.Sprintf("%s: the source file was edited after it was uploaded; upload %s is intact and holds the old version: upload the file again to send the new one",
			manifest.Quote(rec.Path), rec.Upload.ID)
	case fault.UploadUnreadable:
		if fix, ok := wrongMode(ctx, b, rec); ok {
			return fmt.Sprintf("%s: permissions changed; restore them with chmod %o %s", manifest.Quote(uploadFolder(rec)), fix.Mode, shellQuote(fix.Path))
		}
	case fault.UploadMissing:
		if rec.Upload != nil && rec.Upload.Store != "" && b != nil && rec.Upload.Store != b.Location() {
			// The record is another store's (the JSON says so too): uploading again would make a
			// copy in the wrong chat; the check belongs in the record's own store.
			return fmt.Sprintf("%s: upload %s belongs to store %s, not to %s; check it there with --store %s",
				manifest.Quote(rec.Path), rec.Upload.ID, rec.Upload.Store, b.Location(), shellQuote(rec.Upload.Store))
		}
		if rec.Upload != nil {
			return fmt.Sprintf("%s: upload %s is not in the store (swept, removed, or another store's); upload the file again", manifest.Quote(rec.Path), rec.Upload.ID)
		}
	case fault.FileMissing:
		if rec.Upload != nil {
			return fmt.Sprintf("%s: the source file is gone; upload %s was not compared with it", manifest.Quote(rec.Path), rec.Upload.ID)
		}
	}
	return e.Error()
}

// repairCommand is the command line that repairs a corrupted upload: remove it, and upload its
// source again (a fresh upload: the store never names a corrupted one again). A record of verify
// --all knows no source: the command removes the upload and says what is left to do.
func repairCommand(rec *manifest.Record) string {
	st := shellQuote(rec.Upload.Store)
	rm := "attachctl rm --store " + st + " " + rec.Upload.ID
	if rec.Path == "" || rec.Path == rec.Upload.Path {
		return rm + ", then upload its source again with attachctl upload --store " + st + " FILE"
	}
	return rm + " && attachctl upload --store " + st + " " + shellQuote(rec.Path)
}

// uploadChanged reports whether the upload's bytes are what changed: what was read from it is not
// the hash recorded when it was finished (or its size was not, and so nothing was recorded as read).
func uploadChanged(ctx context.Context, b store.Backend, rec *manifest.Record) bool {
	meta, err := b.Info(ctx, rec.Upload.ID)
	return err != nil || rec.Verified == nil || rec.Verified.Blake3 != meta.Blake3
}

// uploadFolder is the folder of the record's upload: verify --all's records of an upload whose
// metadata cannot be read carry only that folder as their path.
func uploadFolder(rec *manifest.Record) string {
	if rec.Upload != nil {
		return filepath.Dir(rec.Upload.Path)
	}
	return rec.Path
}

// wrongMode is what the store says to restore when the record's upload is unreadable because
// its modes were changed (store.Moder); nothing for a store without modes (S3). A record of
// verify --all whose upload's metadata cannot be read names only its folder, whose last element
// is the upload's id (store.FinishedName).
func wrongMode(ctx context.Context, b store.Backend, rec *manifest.Record) (store.ModeRepair, bool) {
	if b == nil || b.Features().Moder == nil {
		return store.ModeRepair{}, false
	}
	id := filepath.Base(rec.Path)
	if rec.Upload != nil {
		id = rec.Upload.ID
	}
	return b.Features().Moder.WrongMode(ctx, id)
}

// shellQuote quotes a path for a command line a person copies, when it needs quoting.
func shellQuote(p string) string {
	for _, r := range p {
		if !(r == '/' || r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
		}
	}
	return p
}

// folderFailure is the line for a folder upload that failed verify: the files inside it that
// changed, went missing or were added, named (store side: store.TreeMismatch), else what the
// error says.
func folderFailure(rec *manifest.Record) string {
	var m *store.TreeMismatch
	if errors.As(rec.Error, &m) {
		return fmt.Sprintf("%s: folder upload changed inside: %s; re-upload the folder from its source (upload %s)",
			manifest.Quote(rec.Upload.Path), m.Error(), rec.Upload.ID)
	}
	return rec.Error.Error()
}
