package store

import (
	"context"
	"errors"

	"github.com/attachctl/attachctl/manifest/fault"
)

// Where a backend keeps an upload as objects under its id (S3), its listing of the id's folder
// says which upload the folder holds (ReadUploadFolder); what is read next, and what each holding
// means to the listing, to Info and to a use, is decided here once, over the few requests the
// backend answers (FolderReader): a file upload's metadata is its object's, a folder upload's its
// listing's (TreeListName) and its metadata's (MetaName); a file upload named like a folder
// upload's listing is told from such a listing by its object's metadata alone; the marker's last
// use is read only when the listing showed one.

// FolderReader is what a backend that keeps uploads as objects reads of an id's folder beyond its
// listing.
type FolderReader interface {
	Objects // its small objects, of which the marker (ReadUseMark)
	// HeadFile reads the Info of the file upload id from the metadata of its object name
	// (ObjectInfo): upload.missing when it is not there, and, wrapping ErrNoTreeMeta, when it is
	// a folder upload's listing.
	HeadFile(ctx context.Context, id, name string) (*Info, error)
	// HeadTree reads the metadata of the folder upload id's listing (ReadListingHead): nil when
	// the listing is not there or carries none.
	HeadTree(ctx context.Context, id string) (*ListingHead, error)
	// ReadTreeObject reads whole the object name (MetaName) of the folder upload id
	// (TreeBackend's): upload.missing when it is not there.
	ReadTreeObject(ctx context.Context, id, name string) (data []byte, where string, err error)
	// FinishedURI names the object name of the finished upload id in messages.
	FinishedURI(id, name string) string
}

// FolderUpload reads the finished upload id its folder holds (f, as listed) for Recognize
// (ListBackend.ReadUpload), and its last use from its marker when the listing showed one. An
// unfinished folder upload is upload.missing (ListPartials names it); a sweep's tombstone alone is
// UploadMeta.Tombstone; a folder that holds no upload, or a file upload named like a folder
// upload's listing that is one (not gone since the listing), is upload.unreadable: named.
func FolderUpload(ctx context.Context, r FolderReader, id, where string, f UploadFolder) (*UploadMeta, error) {
	var m *UploadMeta
	switch f.Holds {
	case HoldsFolder:
		fm, err := folderMeta(ctx, r, id)
		if err != nil {
			return nil, err
		}
		m = fm
	case HoldsFile:
		info, err := r.HeadFile(ctx, id, f.Name)
		if errors.Is(err, ErrNoTreeMeta) {
			return nil, fault.Errorf(fault.UploadUnreadable, "upload %s: %s is %v", id, r.FinishedURI(id, f.Name), ErrNoTreeMeta)
		}
		if err != nil {
			return nil, err
		}
		m = &UploadMeta{Info: info, NoID: true}
	case HoldsUnfinishedFolder:
		return nil, NotFinished(id, where)
	case HoldsTombstone:
		// A sweep's that died before it removed the marker: the next removes it. Any other marker
		// alone is no upload, named as what else is no upload.
		return &UploadMeta{Tombstone: true}, nil
	default:
		return nil, fault.Errorf(fault.UploadUnreadable, "upload %s: holds no object of an upload", id)
	}
	if f.Mark.Exists {
		mk, err := ReadUseMark(ctx, r, id)
		if err != nil {
			return nil, err
		}
		if mk.Exists && !mk.Tombstone {
			m.LastUsed, m.ForeignMarker = mk.At, mk.Foreign
		}
	}
	return m, nil
}

// folderMeta is what the folder upload id's listing's head and its metadata say, for Recognize
// (FolderUploadMeta): its metadata is read only when its listing carries a head.
func folderMeta(ctx context.Context, r FolderReader, id string) (*UploadMeta, error) {
	th, err := r.HeadTree(ctx, id)
	if err != nil {
		return nil, err
	}
	var b []byte
	if th != nil {
		if b, _, err = r.ReadTreeObject(ctx, id, MetaName); err != nil {
			return nil, err
		}
	}
	return FolderUploadMeta(id, MetaName, b, th)
}

// FolderInfo is the Info of the finished upload id its folder holds (f, as listed): from its
// object's metadata, or a folder upload's listing's, which a sweep removes first. upload.missing
// (NotFinished, in the store where) when there is none.
func FolderInfo(ctx context.Context, r FolderReader, id, where string, f UploadFolder) (*Info, error) {
	name, folder := f.Finished()
	if !folder {
		if name == "" {
			return nil, NotFinished(id, where)
		}
		return r.HeadFile(ctx, id, name)
	}
	h, err := r.HeadTree(ctx, id)
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, NotFinished(id, where)
	}
	return &h.Info, nil
}

// SettleFolder makes f, the listing of the upload id's folder, say what only a request tells,
// before a use writes a marker beside it: a file upload named like a folder upload's listing that
// is such a listing (its metadata removed) is no upload; an empty folder upload is named by its
// listing; a marker whose size said neither kind is read.
func SettleFolder(ctx context.Context, r FolderReader, id string, f UploadFolder) (UploadFolder, error) {
	if f.Holds == HoldsFile && f.Name == TreeListName {
		if _, err := r.HeadFile(ctx, id, f.Name); errors.Is(err, ErrNoTreeMeta) {
			f = UploadFolder{Mark: f.Mark, MarkOdd: f.MarkOdd}
		}
	}
	if f.Holds == HoldsFolder && f.Name == "" {
		h, err := r.HeadTree(ctx, id)
		if err != nil {
			return f, err
		}
		if h != nil {
			f.Name = h.Name
		}
	}
	if f.MarkOdd {
		var err error
		f.Mark, err = ReadUseMark(ctx, r, id)
		return f, err
	}
	return f, nil
}
