package store

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// Where a backend keeps what it knows of a finished upload as the metadata of its objects (S3's
// x-amz-meta-*, docs/store.md "S3 stores"), a file upload's object carries its BLAKE3, and a
// folder upload's listing (TreeListName) the folder's name, size, files and BLAKE3 and the hex of
// its source note's key: one HEAD tells what the upload is. How that metadata is written and read
// is the rule below, written once; the backend only makes the requests.

// ErrNoTreeMeta is why an object TreeListName whose metadata is a listing's is no file upload, in
// a folder that holds no MetaName: what is left of a folder upload whose metadata was removed is
// no upload (docs/store.md, "What counts as an upload"), upload.missing to what names it by id and
// named by a listing, as on every store.
var ErrNoTreeMeta = errors.New("a folder upload's listing, and its " + MetaName + " is not there")

// ListingMetadata is the metadata a folder upload's listing object carries: what m says of the
// folder, and note (the hex of its source note's key, for the sweep to drop the note with it).
func ListingMetadata(m *TreeMeta, note string) map[string]string {
	return map[string]string{"blake3": m.Blake3, "name": m.Name, "size": strconv.FormatInt(m.Size, 10),
		"files": strconv.Itoa(m.Files), "note": note}
}

// PutFolderUpload writes what makes the folder upload m finished where its objects are kept
// beside its files: its metadata (MetaName), then its listing (TreeListName) create-only, which
// carries ListingMetadata (note: the hex of its source note's key); the upload is finished from
// that write on. A listing there already (another run of the same folder finished first) must be
// these very bytes, which is this tree (a write finds its own): else upload.hashMismatch.
func PutFolderUpload(ctx context.Context, o LeaseObjects, m *TreeMeta, note string, listing []byte) error {
	_, err := o.Put(ctx, m.ID+"/"+MetaName, AnyVersion, m.Encode())
	if err == nil {
		_, err = o.PutMeta(ctx, m.ID+"/"+TreeListName, "", listing, ListingMetadata(m, note))
	}
	if errors.Is(err, ErrObjectChanged) {
		return fault.Errorf(fault.UploadHashMismatch, "upload %s: finished meanwhile by another run with another tree", m.ID)
	}
	return objectErr("upload "+m.ID, err, fault.UploadUnreadable)
}

// ListingHead is what a folder upload's listing object's metadata says.
type ListingHead struct {
	Info        // the folder upload's: Made is when its listing was written, when it finished
	Note string // the hex of its source note's key; "" for a listing written before it was kept
}

// isListingMeta tells, from an object's metadata, a folder upload's listing from a file upload
// named TreeListName: a listing's carries the folder's name, size and files (the files read only
// for this).
func isListingMeta(md map[string]string) bool {
	_, serr := strconv.ParseInt(md["size"], 10, 64)
	_, ferr := strconv.Atoi(md["files"])
	return md["name"] != "" && serr == nil && ferr == nil
}

// ReadListingHead reads the metadata md of upload id's object TreeListName (where: its key, for
// the message), written at made: nil (and no error) when it is no listing's (a file upload named
// so); upload.unreadable when it carries no BLAKE3.
func ReadListingHead(id, where string, md map[string]string, made time.Time) (*ListingHead, error) {
	if !isListingMeta(md) {
		return nil, nil
	}
	size, _ := strconv.ParseInt(md["size"], 10, 64)
	if err := objectBlake3(id, where, md); err != nil {
		return nil, err
	}
	return &ListingHead{Info: Info{ID: id, Name: md["name"], Size: size, Blake3: md["blake3"], Made: made.UTC()}, Note: md["note"]}, nil
}

// ObjectInfo is the Info of the file upload id whose object name (at where in the store at
// location, of size bytes, written at made) carries md: upload.missing (ErrNoTreeMeta) when it is a
// folder upload's listing, not a file upload named TreeListName; upload.unreadable when it carries
// no BLAKE3.
func ObjectInfo(id, name, location, where string, size int64, md map[string]string, made time.Time) (*Info, error) {
	if name == TreeListName && isListingMeta(md) {
		return nil, fault.Errorf(fault.UploadMissing, "upload %s: not a finished upload in store %s: %s is %w", id, location, where, ErrNoTreeMeta)
	}
	if err := objectBlake3(id, where, md); err != nil {
		return nil, err
	}
	return &Info{ID: id, Name: name, Size: size, Blake3: md["blake3"], Made: made.UTC()}, nil
}

// objectBlake3 checks that the metadata md of upload id's object at where carries a BLAKE3.
func objectBlake3(id, where string, md map[string]string) error {
	if sum, err := CheckHex(md["blake3"]); err != nil || sum == "" {
		return fault.Errorf(fault.UploadUnreadable, "upload %s: %s carries no BLAKE3 in its metadata", id, where)
	}
	return nil
}

// FolderUploadMeta is what the folder upload id's metadata b (MetaName, at where) and its
// listing's head say, for Recognize: its Made is when its listing was written, when it finished
// (as Info and the sweep's re-check say), and the BLAKE3 the listing names must be the
// metadata's. upload.unreadable when the listing carries no head or b is no folder upload's.
func FolderUploadMeta(id, where string, b []byte, head *ListingHead) (*UploadMeta, error) {
	if head == nil {
		return nil, fault.Errorf(fault.UploadUnreadable, "upload %s: %s carries no metadata", id, TreeListName)
	}
	var m TreeMeta
	if len(b) > TreeObjectMax || json.Unmarshal(b, &m) != nil || m.Kind != KindFolder {
		return nil, fault.Errorf(fault.UploadUnreadable, "upload %s: %s is not a folder upload's metadata", id, where)
	}
	m.Info.Made = head.Made
	return &UploadMeta{Info: &m.Info, Recorded: m.ID, Listed: head.Blake3, Folder: true, Files: m.Files}, nil
}
