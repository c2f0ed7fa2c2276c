package store

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"time"
)

// The primitives of a backend: the new seam under the store's rules.
//
// Backend (backend.go) is what the commands call; below it, each backend used to write every rule
// of the store again (resume bookkeeping, folder trees, verify, finding an upload again). This
// file declares what a backend must do that is its own, and nothing else, as restic's backends
// are a few primitives (save, load a range, stat, list, remove) under one repository: the rules
// are written once in this package over these methods, and a new backend (the in-memory one of
// the tests, a future one) implements only them.
//
// Folder uploads are the first rules moved onto it (treeengine.go, treeverify.go: UploadTree,
// TreeInfoOf, OpenTree, VerifyTreeOf; treeengine_test.go has the smallest backend of them, in
// maps); so are the sweep's re-check (sweepengine.go: SweepRemove over a SweepBackend's lock or
// lease, re-read, set-aside and removal; sweepfolder.go: the listing and the sweep of a store kept as
// folders, its trash, over SweepFolders) and what is an upload (recognize.go: RecognizeUploads
// over the metadata a backend reads, and ReadUploadFolder over the names of the objects a backend
// that keeps an upload as objects lists under its id; unfinished.go: ReadUnfinished, what such a
// backend's unfinished upload is and wrote, over the objects it lists of one); so are listing (listengine.go: ListOn over a backend's
// listing of its top and its partials, what is finished, unfinished, a batch area or skipped, an
// entry's size, made and last used, an unfinished folder upload's size summed by TreeBytes) and
// marking uploads used (useengine.go: MarkUsedOn over a backend's hold, look-up and conditional
// write of the use marker) and the single-file upload's resume and find-again (streamengine.go:
// StreamUpload over a StreamBackend's source look-up, resumable write and create-only publish);
// the other store rules are to follow onto the same kind of primitives. What each
// primitive is, in store terms:
//
//   - create-only publish: TreeWrite.Publish makes a whole tree finished at once, or leaves it
//     unfinished, and never replaces a finished upload (a rename that refuses to replace; a
//     conditional PUT with If-None-Match: *);
//   - ranged reads and stat: ReadTreeObject (a small object beside an upload, read whole),
//     OpenTreeObject (one file of a finished tree, read through the backend's guarded open, by
//     resolve and by verify);
//   - list by prefix: ReadTreeDir (what an upload holds beside what its listing names),
//     TreeWrite.ReadDir (what an unfinished one holds);
//   - remove: what a resumed write replaces (TreeWrite.Create) and what the folder no longer
//     holds (TreeWrite.Remove, before Publish);
//   - the resumable write: StartTree finds the unfinished upload of the same source (a partial
//     folder; a source note and the objects already sent) or starts one, and TreeWrite writes it
//     file by file.
//
// Capabilities are declared once, in TreeProperties, not discovered by type assertion.

// TreeProperties are what a backend's folder uploads can do, declared once by the backend.
type TreeProperties struct {
	// Jobs is how many files of a tree the engine writes at once. 1: one after another in the
	// order of their paths (a backend that keeps the folders of the last path open relies on
	// it); more: in any order, each TreeWrite method then called from several goroutines.
	Jobs int
	// VerifyJobs is how many files verify reads at once (at least 1).
	VerifyJobs int
	// FlatList: ReadTreeDir of the upload's folder gives every object below it (a listing by
	// prefix).
	FlatList bool
}

// TreeEntry is one entry of a folder of a finished folder upload (ReadTreeDir).
type TreeEntry struct {
	Name  string
	File  bool      // a regular file
	Size  int64     // a file's bytes (for TreeBytes; verify reads the files themselves)
	At    time.Time // when a file was last written (for TreeBytes; zero: not known)
	Dir   bool      // a folder; neither: something else (a link, a device), named by verify
	Why   string    // what is wrong with this folder (its owner, its mode): named by verify
	Skip  string    // why this folder is not entered ("": it is)
	Where string    // how verify names it when it is no part of the upload ("": by Name)
}

// FlatEntries is what ReadTreeDir and TreeWrite.ReadDir of a FlatList backend give: every file
// of files, by its path from the folder, with its size, sorted.
func FlatEntries[V any](files map[string]V, size func(V) int64) []TreeEntry {
	es := make([]TreeEntry, 0, len(files))
	for rel, v := range files {
		es = append(es, TreeEntry{Name: rel, File: true, Size: size(v)})
	}
	slices.SortFunc(es, func(a, b TreeEntry) int { return strings.Compare(a.Name, b.Name) })
	return es
}

// TreeBackend is what a backend implements so that the rules of folder uploads, written once in
// this package, run over it. Every method names an upload by a valid id; the engine checks ids,
// names and paths before it calls one.
type TreeBackend interface {
	// TreeProperties is what the backend can do.
	TreeProperties() TreeProperties

	// TreeHashFirst reports whether the engine hashes a source whose BLAKE3 the record does
	// not give before it writes anything: always for a backend whose resume is keyed on the
	// BLAKE3 (S3's source note), or when a finished upload of this name and size may be there
	// to name again. A backend that must check the store first (exists, is a store) does so
	// here: it is the first call of an upload.
	TreeHashFirst(ctx context.Context, name string, size int64) (bool, error)

	// StartTree finds what a run of the folder st.Src can take up: a finished upload that may
	// be the same tree (found: its id, which the engine checks whole, its name and BLAKE3
	// included, before it names it), else the unfinished upload of the same source to resume,
	// else a new one (w). A finished upload whose id is st.Avoid (found damaged, another tree,
	// or no longer usable) is not found again: the folder is then uploaded afresh under a new
	// id, which is how a damaged one is repaired.
	StartTree(ctx context.Context, st TreeStart) (found string, w TreeWrite, err error)

	// MarkUsed is Backend.MarkUsed: the engine marks a finished upload used as it names it
	// again (docs/commands.md, upload); when that fails (removed meanwhile) the folder is
	// uploaded afresh.
	MarkUsed(ctx context.Context, ids []string, at time.Time) error

	// ReadTreeObject reads whole the small object name (MetaName or TreeListName) kept beside
	// the files of the finished upload id, through the backend's guarded open, TreeObjectMax+1
	// bytes at most; upload.missing (fault.CodeOf) when it is not there. where names it in
	// messages (a path, a key).
	ReadTreeObject(ctx context.Context, id, name string) (data []byte, where string, err error)

	// Info is the finished upload id's metadata (Backend.Info), asked when it keeps no
	// MetaName: a file upload of a backend that keeps none beside its bytes (S3), or none.
	Info(ctx context.Context, id string) (*Info, error)

	// OpenTreeObject opens the file rel of the finished folder upload id named name, to read
	// (resolve, and verify, which reads every file whole): the guarded open of docs/store.md.
	// upload.missing when it is not there. An error while reading it that the backend does not
	// code (a local file's) is upload.unreadable.
	OpenTreeObject(ctx context.Context, id, name, rel string) (io.ReadCloser, error)

	// ReadTreeDir lists the folder dir of the finished folder upload ti, never following a link,
	// sorted by name: dir is a path from the upload's own folder, "" that folder (where the
	// upload's folder, metadata, listing and marker are; what the backend's own guards demand of
	// it checked first: an error stops verify), ti.Name the upload's folder, and so on below it.
	// A backend whose listing by prefix gives everything below at once
	// (TreeProperties.FlatList) gives every object for dir "", its path from the upload's folder
	// as its Name, and is asked no more: the engine sorts and walks it (verify's files added).
	ReadTreeDir(ctx context.Context, ti *TreeInfo, dir string) ([]TreeEntry, error)
}

// TreeStart is what StartTree is given.
type TreeStart struct {
	Src    *TreeSource
	Size   int64  // the folder's bytes (every file's)
	Blake3 string // the folder's BLAKE3: "" when neither the record nor TreeHashFirst gave it
	Avoid  string // a finished upload not to find again ("": none)
	Try    int    // how many times this upload started over after ErrTreeLost
}

// TreeWrite is the resumable write of one unfinished folder upload. Close releases it (a lock,
// open folders), told how the write ended (nil: published; ErrTreeLost; the error returned).
type TreeWrite interface {
	// ID is the upload's id.
	ID() string

	// Stored opens the copy of f that a run before left, which ReadDir listed with f's size, for
	// the engine to compare with the source byte for byte: nil when the backend keeps no such
	// copy (one not as a finished file is: a local file's mode), or checks what it holds as the
	// file is committed (TreeFileWrite.Commit: an S3 object's size and MD5).
	Stored(f TreeFile) (io.ReadCloser, error)

	// Create starts the write of f, replacing what is there (there: ReadDir listed a file at
	// f.Rel); src is the source file (the bytes also come through Write, in order, as the
	// engine reads and hashes them).
	Create(ctx context.Context, f TreeFile, src TreeSourceFile, there bool) (TreeFileWrite, error)

	// ReadDir lists the folder dir ("": the top) of what the unfinished tree holds so far, as
	// ReadTreeDir lists a finished one (never following a link; TreeProperties.FlatList: every
	// file at once), each file with its size. The engine reads it before it writes anything.
	ReadDir(ctx context.Context, dir string) ([]TreeEntry, error)

	// Remove removes the entries rels (paths from the folder: a file, a folder with all it
	// holds, anything else) from the unfinished tree, never following a link: what a run before
	// stored and the folder no longer holds, or what stands where it has a folder, found by the
	// engine before it writes.
	Remove(ctx context.Context, rels []string) error

	// Publish makes the tree finished at once with its metadata m and listing, create-only:
	// files lists every file of it (sorted), the only ones the tree holds by then. ErrTreeLost: another run of the same folder owns the upload now;
	// the engine starts over (with st.Try one more).
	Publish(ctx context.Context, m *TreeMeta, files []TreeFile, listing []byte) error

	Close(err error)
}

// TreeFileWrite is the write of one file of a folder upload.
type TreeFileWrite interface {
	io.Writer // the file's bytes, in order; an error is coded (store.unreachable, upload.unreadable)
	// Commit ends the file, whose BLAKE3 is blake3: durable by the time Publish returns. A
	// backend that holds this file already (a run before sent it) may keep that copy.
	Commit(ctx context.Context, blake3 string) error
	// Abort drops what was written (the write failed).
	Abort()
}

// ErrTreeLost is Publish's answer when another run of the same folder took its upload over.
var ErrTreeLost = errors.New("another run of the same folder owns its upload")
