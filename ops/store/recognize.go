package store

import (
	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
)

// What counts as an upload this store made is one rule on every backend (docs/store.md): an
// entry named by an upload id whose metadata, as the backend keeps it, reads as the store writes
// it (Recognize). Anything else where uploads are kept (a foreign object under the store's
// prefix, a copied or hand-written .upload.json) is skipped and named in Listing.Skipped: ls,
// verify --all and sweep name it and go on, and none of them shows, fails or removes it.

// Recognize checks the metadata m a backend read for the entry named id. recorded is the id the
// metadata itself records (the local store's metadata, a folder upload's .upload.json on every
// backend); noID says the backend keeps no id beside the bytes (an S3 file upload's object
// metadata), so there is none to compare. The name must be plain, the size not negative and the
// BLAKE3 64 hex digits. The error says why it is no upload of this store (upload.unreadable).
func Recognize(id, recorded string, noID bool, m *Info) error {
	switch {
	case m == nil:
		return fault.Errorf(fault.UploadUnreadable, "upload %s: no metadata", id)
	case !noID && recorded != id:
		return fault.Errorf(fault.UploadUnreadable, "upload %s: its metadata names upload %s", id, manifest.Quote(recorded))
	case ValidName(m.Name) != nil:
		return fault.Errorf(fault.UploadUnreadable, "upload %s: its metadata names no plain file name", id)
	case m.Size < 0:
		return fault.Errorf(fault.UploadUnreadable, "upload %s: its metadata gives a negative size", id)
	}
	if sum, err := CheckHex(m.Blake3); err != nil || sum == "" {
		return fault.Errorf(fault.UploadUnreadable, "upload %s: its metadata carries no BLAKE3", id)
	}
	return nil
}

// NotAnUpload is the Skip of what Recognize refused (or what no metadata names) at path.
func NotAnUpload(path string, why error) Skip {
	msg := "not an upload of this store"
	if why != nil {
		msg += ": " + fault.AsError(why, fault.UploadUnreadable).Message
	}
	return Skip{Path: path, Why: msg}
}
