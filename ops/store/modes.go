package store

import (
	"context"
	"io/fs"
)

// ModeRepair is a folder or file of an upload whose mode is not the one its store gives it, and
// the mode the store gives it: what a person restores (chmod) when verify finds the upload
// unreadable because its modes were changed.
type ModeRepair struct {
	Path string
	Mode fs.FileMode
}

// Moder is a backend whose uploads are files with modes it keeps (the local store). A backend
// whose uploads have no modes (S3) has no Moder, and nothing is said of modes there.
type Moder interface {
	// WrongMode is the first of the folder of upload id and the files in it whose mode is not
	// the store's, with the store's; ok=false when every mode is right (the upload is
	// unreadable for another reason) or the folder cannot be read.
	WrongMode(ctx context.Context, id string) (r ModeRepair, ok bool)
}
