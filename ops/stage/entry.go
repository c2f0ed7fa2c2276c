package stage

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops/store"
)

// Uploads lists the uploads of b (`ls`): what the store does not recognise is in the listing's
// Skipped, and a batch's staging area, which is no upload, is left out (what it builds is listed
// once committed).
func Uploads(ctx context.Context, b store.Backend) (*store.Listing, error) {
	l, err := b.List(ctx)
	if err != nil {
		return nil, err
	}
	l.Entries = slices.DeleteFunc(l.Entries, func(e store.Entry) bool { return e.Batch })
	return l, nil
}

// EntryRecord is the manifest record of one listed upload (`ls`). A finished upload's is the
// record upload wrote (its hash, a folder upload's kind and file count, as the listing read them
// from its metadata: no request of its own); an unfinished one's path is where it will be once
// finished, and it has no upload and no hash yet. Both carry the listing's id, made, lastUsed
// (null when never) and finished.
func EntryRecord(b store.Backend, e store.Entry) *manifest.Record {
	path := store.FinishedName(b, e.ID, e.Name)
	rec := &manifest.Record{Path: path, Name: e.Name}
	rec.SetSize(e.Size)
	if e.Finished {
		rec.Blake3 = e.Blake3
		rec.Upload = &manifest.Upload{ID: e.ID, Store: b.Location(), Path: path}
		if e.Folder {
			rec.Kind, rec.Mime, rec.Files = manifest.KindFolder, manifest.MimeFolder, e.Files
		}
	}
	stamp := func(t time.Time) json.RawMessage {
		if t.IsZero() {
			return json.RawMessage("null")
		}
		b, _ := json.Marshal(t.UTC().Format(time.RFC3339))
		return b
	}
	id, _ := json.Marshal(e.ID)
	finished, _ := json.Marshal(e.Finished)
	rec.Extra = []manifest.Field{{Key: "id", Value: id}, {Key: "made", Value: stamp(e.Made)},
		{Key: "lastUsed", Value: stamp(e.LastUsed)}, {Key: "finished", Value: finished}}
	return rec
}
