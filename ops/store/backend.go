// Package store is the seam between attachctl's commands and the place uploads are kept: the
// operations the commands need, as a Backend interface, and the types they exchange. It holds no
// backend itself and imports nothing platform-specific, so that policy code (sweep, resolve) can
// depend on it alone. The local folder backend (ops/store/internal/local) and the S3-compatible
// one (ops/store/internal/s3) implement it, internal to ops/store: ops/store/open opens them by
// location. Both must pass the conformance suite in ops/store/storetest.
//
// The seam is shaped like tusd's DataStore and restic's backend: a small required interface, and
// optional features as small interfaces a backend declares once in its Features. Nothing in it
// assumes a file descriptor, a rename or a lock file:
//
//   - Finish is create-only: a finished upload appears whole or not at all, and an upload that is
//     already finished is never overwritten (a local rename that refuses to replace; an S3
//     multipart upload completed with If-None-Match: *).
//   - MarkUsed and a sweep's removal are ordered by whatever exclusion the backend has: a lock file
//     locally; on S3 a conditional write of the .used object, and a tombstone the sweep writes
//     conditionally before it deletes. A use that races a removal either keeps the upload or is
//     upload.missing; it never marks an upload that is then removed.
//   - Sweep is a Sweeper: the one sweep that runs holds it; its Remove decides and removes one
//     stale entry at a time, re-reading the entry under the backend's exclusion and asking the
//     caller's policy again before anything is removed.
//
// Errors carry their code (fault.CodeOf; docs/errors.md): upload.invalid for an id or name that
// is not plain, upload.missing for an upload that is not there, store.notStore for a location that
// exists and is not a store, store.locked, store.unreachable, and the upload.* codes of
// docs/errors.md.
package store

import (
	"context"
	"io"
	"time"
)

// Backend is one store: the uploads of one chat.
//
// A store that does not exist yet is empty: List returns nothing, Status and Open are
// upload.missing, and none of them creates anything. A location that exists and is not a store is
// refused by every method with store.notStore, and nothing is written there; only Begin (and a
// backend's own stage upload) may make a new store, or mark an empty location, or one laid out by
// an earlier version, as a store.
type Backend interface {
	// Location names the store for messages and records: an absolute folder, or s3://BUCKET/PREFIX.
	Location() string

	// Begin starts an unfinished upload named name (a plain name) of size bytes (-1: open, fixed
	// at Finish) and returns its new id (a lowercase UUIDv7). Its offset is 0.
	Begin(ctx context.Context, name string, size int64) (id string, err error)

	// Write appends what r holds to the unfinished upload id, whose current offset must be offset
	// (upload.offset otherwise, and the current offset is returned). It is taken whole or not at
	// all: bytes past the declared size are upload.pastSize and none of them is kept. It returns
	// the new offset, durable when Write returns.
	Write(ctx context.Context, id string, offset int64, r io.Reader) (int64, error)

	// Status reports an upload, unfinished or finished.
	Status(ctx context.Context, id string) (*Status, error)

	// Finish checks the unfinished upload id against size (-1: not checked) and blake3 (hex, "":
	// not checked) and publishes it create-only; upload.sizeMismatch and upload.hashMismatch keep
	// it unfinished. Finishing a finished upload returns it after the same checks.
	Finish(ctx context.Context, id string, size int64, blake3 string) (*Info, error)

	// Abort removes the unfinished upload id. A finished upload is not removed: upload.invalid.
	Abort(ctx context.Context, id string) error

	// Open opens the finished upload id named name for reading, through the backend's guarded
	// open (docs/store.md): upload.missing when it is not a finished upload of this store,
	// upload.unreadable when it breaks a rule.
	Open(ctx context.Context, id, name string) (Reader, error)

	// Info reads a finished upload's metadata without opening its bytes.
	Info(ctx context.Context, id string) (*Info, error)

	// List returns every upload of the store, finished and unfinished, by id, and the entries the
	// store does not recognise (left alone by every command).
	List(ctx context.Context) (*Listing, error)

	// MarkUsed marks the finished uploads ids used at at, so that a sweep with an earlier cutoff
	// keeps them. It first checks every id, then marks: upload.missing for one that is not a
	// finished upload, and a call refused for one id marks none where it can.
	MarkUsed(ctx context.Context, ids []string, at time.Time) error

	// Sweep takes the store's one-sweep-at-a-time exclusion, waiting at most wait (store.locked
	// after that). The Sweeper must be closed. A dry run decides as a sweep does and changes
	// nothing anywhere.
	Sweep(ctx context.Context, wait time.Duration, dryRun bool) (Sweeper, error)

	// Features declares what the backend can do besides these methods (features.go).
	Features() Features
}

// Sweeper is the hold of the one sweep that runs on a store.
type Sweeper interface {
	// Remove decides and removes each entry of cands in turn. For each it re-reads the entry
	// under the backend's exclusion against uses and writers, asks stale about the fresh entry,
	// and removes it only when stale still says so; each entry then gets exactly one call of
	// each, with the fresh entry, after its removal is done (or, in a dry run, decided). An entry being written, or used
	// since, is Kept; one that went away meanwhile is Gone. Remove returns ctx.Err() when ctx is
	// cancelled: it stops between two entries, so every entry reported Removed is gone and every
	// other one is as it was. An error from each stops it and is returned.
	Remove(ctx context.Context, cands []Entry, stale func(Entry) bool, each func(Entry, Outcome, error) error) error

	// DropLeftover removes what a killed run left (Listing.Leftovers of a listing taken under
	// the hold); nil when it is not there any more.
	DropLeftover(ctx context.Context, l Leftover) error

	// Close releases the hold.
	Close() error
}

// Outcome is what a sweep did with one entry.
type Outcome int

const (
	Removed Outcome = iota // removed (in a dry run: would be)
	Kept                   // used, written or being written since it was listed
	Gone                   // not there any more: finished, aborted or removed by another
	Failed                 // the removal failed; the error says why, and the entry is as it was
)

// Status is what `upload status` prints.
type Status struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Offset   int64  `json:"offset"`
	Size     int64  `json:"size"` // -1 while left open
	Finished bool   `json:"finished"`
}

// Info is a finished upload's metadata.
type Info struct {
	ID     string    `json:"id"`
	Name   string    `json:"name"`
	Size   int64     `json:"size"`
	Blake3 string    `json:"blake3"`
	Made   time.Time `json:"made"`
}

// Reader is a finished upload open for reading.
type Reader interface {
	io.ReadCloser
	// Info is the upload's metadata, as recorded when it was finished.
	Info() *Info
}

// Entry is one upload as List sees it.
type Entry struct {
	ID       string
	Name     string // "" for an unfinished upload whose metadata is unreadable
	Size     int64  // finished: its size; unfinished: the bytes written so far
	Finished bool
	Made     time.Time // finished: when it was finished; unfinished: when it was begun
	// LastUsed is, for a finished upload, when it was last marked used (zero: never); for an
	// unfinished one, when it was last written.
	LastUsed time.Time
	// Busy: an unfinished upload that a process is writing now.
	Busy bool
	// Blake3 (finished: its BLAKE3), Folder (a finished folder upload, of Files files): as its
	// metadata says, which the listing read (ls shows them with no read of each upload).
	Blake3 string
	Folder bool
	Files  int
	// Batch: not an upload but a batch's staging area (the local store's, for many small
	// uploads at once): unfinished, listed so that a sweep removes what a killed run left, and
	// neither shown by ls nor counted against the store's limits (what it builds is counted as
	// each upload is admitted).
	Batch bool
}

// Skip is something in the store that is not an upload the store recognises (store.Recognize),
// left in place: named by ls, verify --all and sweep, never shown, failed or removed.
type Skip struct {
	Path string
	Why  string
}

// Listing is what List returns: the uploads in id order, what was not recognised, and what
// killed runs left that is neither (its Leftovers, which a sweep removes as it begins).
type Listing struct {
	Entries   []Entry
	Skipped   []Skip
	Leftovers []Leftover
}

// Leftover is what a killed run left under an upload id that is no upload and no skip
// (listengine.go finds them, docs/store.md): a sweep removes it first (Sweeper.DropLeftover).
type Leftover struct {
	ID string
	// Partial: the partial a finish killed after its publish left beside the finished upload
	// of its id. Else the marker a sweep killed after it removed the upload left alone.
	Partial bool
}

// Pather is implemented by a backend whose finished uploads are files on this machine: the
// finished upload's absolute path (the manifest's upload.path, docs/manifest.md).
type Pather interface {
	FinishedPath(id, name string) string
}
