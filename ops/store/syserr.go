package store

import (
	"errors"
	"io/fs"
	"syscall"

	"github.com/attachctl/attachctl/manifest/fault"
)

// How a system error of a store kept as files is coded (docs/errors.md): one rule for every file
// and folder the store reads or writes, whichever backend or engine met it. The errnos are the
// syscall package's, which names them on every platform.

// FileErr codes an error reading or writing the store's file or folder at path: a full disk or a
// full quota is upload.diskFull, anything else upload.unreadable; nil stays nil. The path is said
// once: an *fs.PathError of the same path is unwrapped to its cause, which is kept.
func FileErr(path string, err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		err = pe.Err
	}
	switch {
	case errors.Is(err, syscall.ENOSPC): // "no space left on device"
		return fault.Errorf(fault.UploadDiskFull, "%s: %w", path, err)
	case errors.Is(err, syscall.EDQUOT):
		return fault.Errorf(fault.UploadDiskFull, "%s: no space left for this user: %w", path, err)
	}
	return fault.Errorf(fault.UploadUnreadable, "%s: %w", path, err)
}

// FolderErr codes an error opening one of the store's folders, or a file of its internal folder,
// at path: not there is upload.missing; a link where a folder or file should be is
// upload.unreadable, as the guarded open says, its cause kept (which of the two it was); anything
// else as FileErr. nil, and an error coded already, are left as they are.
func FolderErr(path string, err error) error {
	switch {
	case err == nil || fault.CodeOf(err) != "":
		return err
	case errors.Is(err, syscall.ENOENT):
		return fault.Errorf(fault.UploadMissing, "%s: no such folder", path)
	case replaced(err): // a link, or a file, where a folder should be
		return fault.Errorf(fault.UploadUnreadable, "%s: a symlink or not a real folder: %w", path, err)
	}
	return FileErr(path, err)
}

// GuardErr codes an error of the guarded open of upload id, or of writing its marker, by the path
// that failed: not there is upload.missing, a full disk upload.diskFull, a link or anything else
// upload.unreadable (as FolderErr says it), the message naming the upload. nil, and an error
// coded already (a refusal of the guarded open's check), are left as they are.
func GuardErr(id string) func(path string, err error) error {
	return func(path string, err error) error {
		switch {
		case err == nil || fault.CodeOf(err) != "":
			return err
		case errors.Is(err, syscall.ENOENT):
			return fault.Errorf(fault.UploadMissing, "upload %s: %s: not a finished upload in this store", id, path)
		}
		return fault.At("upload "+id, FolderErr(path, err), fault.UploadUnreadable)
	}
}
