package store

import (
	"context"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// The sweep's removal of uploads kept as objects (S3's), written once over the backend's
// primitives: the tombstone that sets a finished upload aside where there is no lock, and the
// order in which an upload's objects are deleted, so that a sweep killed at any point leaves
// what the next one recognises and finishes (docs/store.md, "What is in the bucket").

// ObjectRemoval is the removal of one store's uploads kept as objects. Keys are from the store's
// root, as Objects takes them.
type ObjectRemoval struct {
	O Objects // the use markers
	// Walk lists the objects under <id>/, named by their paths from there.
	Walk func(ctx context.Context, id string) ([]FolderObject, error)
	// Delete removes the objects keys, many at once; one not there is no error.
	Delete func(ctx context.Context, keys []string) error
	// HeadTree reads the metadata of <id>/.tree.b3 (nil: the upload has no listing).
	HeadTree func(ctx context.Context, id string) (*ListingHead, error)
	// DropNote removes the source note, when it still names the upload id.
	DropNote func(ctx context.Context, note, id string)
	// DropMultiparts aborts the multipart uploads left under <id>/.
	DropMultiparts func(ctx context.Context, id string) error
	// Abort aborts the multipart upload uploadID that writes the file name of the upload id (a
	// stream's); one not there any more is no error.
	Abort func(ctx context.Context, id, name, uploadID string) error
}

// ObjectDoomed is what RecheckMarked read of a finished upload, for DoomMarked and DropFinished.
type ObjectDoomed struct {
	M    UseMark // its marker
	Tree bool    // a folder upload
}

// RecheckMarked reads the marker of the finished upload id again (tree: a folder upload): its
// last use, and a tombstone, which is a sweep's that died before it deleted: its decision stands.
func (r ObjectRemoval) RecheckMarked(ctx context.Context, id string, tree bool) (Reread, error) {
	m, err := ReadUseMark(ctx, r.O, id)
	rr := Reread{Decided: m.Tombstone, Note: &ObjectDoomed{M: m, Tree: tree}}
	if m.Exists && !m.Tombstone {
		rr.Used = m.At
	}
	return rr, err
}

// DoomMarked replaces the finished upload's marker (as RecheckMarked read it) by a tombstone,
// conditionally: a use that wrote first makes the write fail (ErrSweepKept), a use that comes
// after finds the tombstone. A tombstone written already stands.
func (r ObjectRemoval) DoomMarked(ctx context.Context, id string, d *ObjectDoomed) error {
	if d.M.Tombstone {
		return nil
	}
	_, err := WriteUseMark(ctx, r.O, id, d.M, "tombstone", time.Now(), ErrSweepKept)
	return err
}

// DropFinished removes the finished upload id (name: a file upload's) whose marker is a
// tombstone. A file upload's object goes first, its marker last: when the marker's deletion fails
// the upload is gone all the same, and the next sweep removes the tombstone left alone
// (DropTombstone). A folder upload's source note goes first, when it names id (a run of the same
// folder from now on starts a new upload rather than name this one), then its listing (from then
// on it is not finished: a sweep killed after it leaves an unfinished upload, its files and the
// tombstone), then the rest as of an unfinished one (DropTreeObjects).
func (r ObjectRemoval) DropFinished(ctx context.Context, id, name string, d *ObjectDoomed) error {
	if !d.Tree {
		if err := r.Delete(ctx, []string{id + "/" + name}); err != nil {
			return err
		}
		r.Delete(ctx, []string{useKey(id)})
		return nil
	}
	th, err := r.HeadTree(ctx, id)
	if err != nil {
		return err
	}
	if th != nil {
		r.DropNote(ctx, th.Note, id)
	}
	if err := r.Delete(ctx, []string{id + "/" + TreeListName}); err != nil {
		return err
	}
	if listed, err := r.DropTreeObjects(ctx, id); err != nil || !listed {
		return err
	}
	// A server whose listings lag its deletes: the next sweep goes on (the tombstone stands).
	return fault.Errorf(fault.UploadUnreadable, "upload %s: %s is still listed after its removal", id, id+"/"+TreeListName)
}

// DropTreeObjects removes the objects of the unfinished folder upload id: everything under <id>/
// but its marker, its multipart uploads, then the marker. A folder upload finished meanwhile (its
// listing there) is left, and reported finished (listed).
func (r ObjectRemoval) DropTreeObjects(ctx context.Context, id string) (listed bool, err error) {
	objs, err := r.Walk(ctx, id)
	if err != nil {
		return false, err
	}
	var keys []string
	for _, o := range objs {
		if o.Name == TreeListName {
			return true, nil
		}
		if o.Name != UsedName {
			keys = append(keys, id+"/"+o.Name)
		}
	}
	if err := r.Delete(ctx, keys); err != nil {
		return false, err
	}
	if err := r.DropMultiparts(ctx, id); err != nil {
		return false, err
	}
	return false, r.Delete(ctx, []string{useKey(id)})
}
