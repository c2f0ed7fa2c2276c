package store

import (
	"context"
	"slices"

	"github.com/attachctl/attachctl/manifest/fault"
)

// The removal of an unfinished upload kept as objects (S3), written once over ObjectRemoval: which
// objects it is made of (ReadUnfinished) and the order they go in, so that a removal cut at any
// step (a kill, a server that fails) leaves an upload that can still be found, read as unfinished
// and removed again.

// DroppedInfo is what an unfinished upload's info names beyond its partial (nil info: nothing).
type DroppedInfo struct {
	Folder   bool   // a folder upload: its files under its id's folder
	Note     string // a folder upload's source note (SourceKey), dropped when it names the upload
	Name     string // the file a stream's multipart upload writes
	UploadID string // a stream's multipart upload ("": none)
}

// DropUnfinished removes what the unfinished upload id left, its info di (nil: none, or not read):
// a folder upload's files (DropTreeObjects), then its source note unless the folder upload was
// found finished meanwhile (its files and note are the finished upload's then); a stream's
// multipart upload; the other objects of its partial (a step-by-step upload's chunks); its info
// last, so that until the end an upload with its info is left, which is found and removed again.
func (r ObjectRemoval) DropUnfinished(ctx context.Context, id string, di *DroppedInfo) error {
	if di != nil && di.Folder {
		finished, err := r.DropTreeObjects(ctx, id)
		if err != nil {
			return err
		}
		if !finished {
			r.DropNote(ctx, di.Note, id)
		}
	}
	if di != nil && di.UploadID != "" {
		if err := r.Abort(ctx, id, di.Name, di.UploadID); err != nil {
			return objectErr("abort "+id, err, fault.UploadUnreadable)
		}
	}
	keys, err := r.O.List(ctx, partialDir(id))
	if err != nil {
		return objectErr("abort "+id, err, fault.UploadUnreadable)
	}
	keys = slices.DeleteFunc(keys, func(k string) bool { return k == infoKey(id) })
	if err := r.Delete(ctx, keys); err != nil {
		return objectErr("abort "+id, err, fault.UploadUnreadable)
	}
	return objectErr("abort "+id, r.O.Delete(ctx, infoKey(id), ""), fault.UploadUnreadable)
}

// partialDir is the folder of the unfinished upload id's partial, whose objects are its info and
// its chunks.
func partialDir(id string) string { return InternalDir + "/partial/" + id + "/" }
