package store

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// The rules of an upload kept as files in a folder on this machine (the local store): what the
// upload's folder may hold, the owner, links and mode each entry must have, what verify names
// wrong there and with which code, and which mode a repair restores. The backend reads the
// folder (each entry's lstat, no link followed) into FileStats; these functions judge them.

// Modes the store gives what it makes, whatever the umask. A finished upload's files (its bytes
// and its metadata) are read-only, so that an agent running as the user does not change an
// original in place by accident; stores made before that keep 0600 there, which still reads.
const (
	DirMode      fs.FileMode = 0o700
	FileMode     fs.FileMode = 0o600
	ReadOnlyMode fs.FileMode = 0o400
)

// FinishedMode reports whether perm is a mode a finished upload's file may have: read-only, or
// the 0600 of a store made before finished uploads were read-only.
func FinishedMode(perm uint32) bool {
	return perm == uint32(ReadOnlyMode) || perm == uint32(FileMode)
}

// FileStat is what a backend that keeps uploads as files read of one entry of a folder, never
// following a link.
type FileStat struct {
	Name  string      // its name in the folder ("" the folder itself)
	Type  fs.FileMode // 0 a regular file, fs.ModeDir, fs.ModeSymlink, fs.ModeIrregular anything else
	Perm  uint32      // its permission bits as the system gives them (setuid, setgid, sticky too)
	Uid   uint32      // its owner
	Own   bool        // owned by the current user
	Links uint64      // its hard links
	Size  int64       // a file's bytes
	At    time.Time   // when a file was last written
}

// OwnFileWhy says what keeps st from being one of the store's own files: a regular file of the
// current user, no group or other permission bits, exactly one link; "" when it is one.
func OwnFileWhy(st FileStat) string {
	switch {
	case st.Type == fs.ModeSymlink:
		return "a symlink"
	case st.Type != 0:
		return "not a regular file"
	case !st.Own:
		return OwnerWhy(st.Uid)
	case st.Perm&0o077 != 0:
		return fmt.Sprintf("mode %04o gives group or others access", st.Perm)
	case st.Links != 1:
		return fmt.Sprintf("%d hard links, not 1", st.Links)
	}
	return ""
}

// OwnerWhy says why an entry owned by uid is refused: the store's entries are the current user's.
func OwnerWhy(uid uint32) string { return fmt.Sprintf("owned by uid %d, not by the current user", uid) }

// DirWhy says why the folder st is none the store takes as its own (owned by the current user,
// mode 0700), in the words of the check of an upload's folder; "" when it is one.
func DirWhy(st FileStat) string {
	switch {
	case !st.Own:
		return OwnerWhy(st.Uid)
	case st.Perm != uint32(DirMode):
		return ModeWhy(DirMode, st.Perm)
	}
	return ""
}

// ModeWhy says why an entry of mode perm is refused where the store gives it want: one message
// for the check of an upload's folder and the guarded open, naming the older store's 0600 a
// finished file may keep.
func ModeWhy(want fs.FileMode, perm uint32) string {
	why := fmt.Sprintf("mode %04o, not %04o", perm, want)
	switch want {
	case DirMode:
		return "folder " + why
	case ReadOnlyMode:
		return why + " (or an older store's 0600)"
	}
	return why
}

// TreeEntry is the entry st of a folder of a folder upload kept as files (ReadTreeDir,
// TreeWrite.ReadDir): a folder not the current user's of mode 0700 is named by verify. Whether
// it is entered (Skip) is the backend's to say.
func (st FileStat) TreeEntry() TreeEntry {
	e := TreeEntry{Name: st.Name}
	switch st.Type {
	case 0:
		e.File, e.Size, e.At = true, st.Size, st.At
	case fs.ModeDir:
		e.Dir, e.Why = true, DirWhy(st)
	}
	return e
}

// FileFolder is what a backend read of the folder of a finished upload kept as files: the
// folder's own stat first (Name ""), then each entry's in the listing's order.
type FileFolder struct {
	ID      string
	Dir     string // the folder's path, for messages and repairs
	Name    string // the upload's name (Check)
	Tree    bool   // a folder upload (Check)
	Entries []FileStat
}

// Check is what the store demands of the upload's folder (verify asks it before it reads the
// bytes, and of a folder upload's own folder): a real folder of mode 0700 owned by the user,
// holding only what BesideUpload allows (and a marker being written), the files the store's own
// (OwnFileWhy) of the mode TopMode names, a folder upload's folder a real folder of mode 0700.
// The first entry found wrong is upload.unreadable, naming it and why.
func (u *FileFolder) Check() error {
	for _, st := range u.Entries {
		n := st.Name
		p, why := u.Dir, ""
		if n != "" {
			p = u.Dir + "/" + n
		}
		isDir := st.Type == fs.ModeDir
		switch {
		case n == "" || u.Tree && n == u.Name && isDir: // a folder: its mode (below), its owner if the top
			if n == "" && !st.Own {
				why = OwnerWhy(st.Uid)
			}
		case !BesideUpload(u.Name, n, u.Tree) && !u.writing(n):
			p, why = u.Dir, fmt.Sprintf("unexpected entry %q", n)
		case u.Tree && n == u.Name:
			why = "not a real folder"
		default:
			why = OwnFileWhy(st)
		}
		if want, ok := u.TopMode(n, isDir, st.Perm); why == "" && !ok {
			why = ModeWhy(want, st.Perm)
		}
		if why != "" {
			return fault.Errorf(fault.UploadUnreadable, "upload %s: %s: %s", u.ID, p, why)
		}
	}
	return nil
}

// WrongMode is the first of the folder and the regular files in it whose mode is not the one
// Check takes (TopMode), with the mode to restore; what is not a regular file is Check's to name.
func (u *FileFolder) WrongMode() (ModeRepair, bool) {
	for _, st := range u.Entries {
		if st.Name != "" && st.Type != 0 {
			continue
		}
		if want, ok := u.TopMode(st.Name, st.Name == "", st.Perm); !ok {
			p := u.Dir
			if st.Name != "" {
				p = u.Dir + "/" + st.Name
			}
			return ModeRepair{Path: p, Mode: want}, true
		}
	}
	return ModeRepair{}, false
}

// TopMode is the mode the store gives the entry n of an upload's folder ("" the folder itself),
// and whether it takes perm: a folder 0700; the marker (and one being written) 0600; anything
// else (the file, the metadata, the listing) 0400, or an older store's 0600.
func (u *FileFolder) TopMode(n string, dir bool, perm uint32) (fs.FileMode, bool) {
	switch {
	case dir:
		return DirMode, perm == uint32(DirMode)
	case n == UsedName || u.writing(n):
		return FileMode, perm == uint32(FileMode)
	}
	return ReadOnlyMode, FinishedMode(perm)
}

// writing reports whether n is a marker being written (TempPrefix).
func (u *FileFolder) writing(n string) bool { return strings.HasPrefix(n, TempPrefix(UsedName)) }

// TempPrefix starts the name a new file is written under, beside the name it is then renamed
// over where writers may race (a marker's, among them): an upload's folder may hold one.
func TempPrefix(name string) string { return name + ".new-" }

// UploadPath is where a path could lie in a store kept as folders: the file rel ("/"-separated:
// a file upload's name, or a folder upload's name and the path below it) of the upload ID of the
// store Store.
type UploadPath struct{ Store, ID, Rel string }

// UploadPathsOf reads the absolute path abs as the places it could be of a finished upload's file
// in a store kept as folders (verify --check names such a path): STORE/<id>/<name> (a file
// upload) or STORE/<id>/<name>/<rel> (a file of a folder upload), <id> an upload id and <name>
// an upload's name. The nearest the file comes first; none when abs names no such place.
// Whether STORE is a store is the backend's to judge.
func UploadPathsOf(abs string) []UploadPath {
	parts := strings.Split(filepath.ToSlash(filepath.Clean(abs)), "/")
	var ps []UploadPath
	for k := len(parts) - 2; k > 0; k-- {
		if ValidID(parts[k]) == nil && ValidName(parts[k+1]) == nil {
			dir := filepath.FromSlash(strings.Join(parts[:k], "/"))
			if dir == "" {
				dir = string(filepath.Separator)
			}
			ps = append(ps, UploadPath{dir, parts[k], strings.Join(parts[k+1:], "/")})
		}
	}
	return ps
}
