package store

import (
	"context"
	"time"
)

// The reservations (Reserver) and the mark (Marker) of a store that keeps them as small files in
// its internal folder on this machine (the local store), written once over the folders of small
// files the backend opens (SmallFiles): which file is which, what is made create-only and what is
// replaced whole, and what a folder or a file that is not there means. The backend keeps the
// opens (never through a link), the reads, the writes and their durability.

// SmallFiles are the folders of a store's own small files, in its internal folder.
type SmallFiles interface {
	// OpenSmall opens the folder rel of the internal folder ("": the internal folder itself),
	// each folder on the way opened without following a link: with create, made where missing;
	// without, nil and no error when one on the way is not there.
	OpenSmall(rel string, create bool) (SmallDir, error)
}

// SmallDir is one open folder of small files. Its errors are coded by the backend, naming the
// file.
type SmallDir interface {
	// Read reads the file name whole, limit bytes at most, only when it is a regular file, never
	// through a link: nil and no error when it is not there.
	Read(name string, limit int64) ([]byte, error)
	// Create makes the new file name holding body: refused when name is there.
	Create(name string, body []byte) error
	// Replace puts body at name whole and durably: a reader finds the old file or the new one,
	// and what was at name (a link even) is never opened, it only loses its name.
	Replace(name string, body []byte) error
	// Names lists the names of its entries.
	Names() ([]string, error)
	// Remove removes the file name; one that is not there is no error.
	Remove(name string) error
	Close()
}

// Where the reservations and the mark are kept, and how much of each is read.
const (
	reservedDir    = "reserved" // a reservation is reservedDir/<id> in the internal folder
	reservationMax = 4096
	markMax        = 1 << 16
)

// FileReserver is Reserver over a store's small files: a reservation is the file
// reserved/<id> of its internal folder, made create-only.
type FileReserver struct {
	F SmallFiles
	// Lock takes the limits lock, waiting at most wait; unlock releases it. It is a lock the
	// system holds for its holder (released when the holder dies), never lost while held.
	Lock func(wait time.Duration) (unlock func() error, err error)
}

func (r FileReserver) LockLimits(_ context.Context, wait time.Duration) (LimitsLock, error) {
	unlock, err := r.Lock(wait)
	if err != nil {
		return nil, err
	}
	return fileLock(unlock), nil
}

// fileLock is a held limits lock of FileReserver: never lost.
type fileLock func() error

func (unlock fileLock) Unlock(context.Context) (bool, error) { return true, unlock() }

// PutReservation makes the file of the reservation key, create-only; a key that is no upload id
// names no file (upload.invalid).
func (r FileReserver) PutReservation(_ context.Context, key string, body []byte) error {
	if err := ValidID(key); err != nil {
		return err
	}
	d, err := r.F.OpenSmall(reservedDir, true)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Create(key, body)
}

// Reservations reads every reservation's file: none when there is no folder of them. One that
// cannot be read is kept with an empty body, which no check counts (and drops); one removed
// between the listing and its read is none.
func (r FileReserver) Reservations(context.Context) (map[string][]byte, error) {
	out := map[string][]byte{}
	d, err := r.F.OpenSmall(reservedDir, false)
	if err != nil || d == nil {
		return out, err
	}
	defer d.Close()
	names, err := d.Names()
	if err != nil {
		return out, err
	}
	for _, name := range names {
		b, err := d.Read(name, reservationMax)
		switch {
		case err != nil:
			out[name] = []byte{}
		case b != nil:
			out[name] = b
		}
	}
	return out, nil
}

// DropReservation removes the file of the reservation key, if it is there.
func (r FileReserver) DropReservation(_ context.Context, key string) error {
	d, err := r.F.OpenSmall(reservedDir, false)
	if err != nil || d == nil {
		return err
	}
	defer d.Close()
	return d.Remove(key)
}

// FileMark is Marker over a store's small files: the mark is the file MarkName of its internal
// folder, replaced whole (no version: the backend cannot tell a mark changed since it was read).
// Make makes or marks the store (as an upload does); Open opens it for reading first (a folder
// that is no store is refused).
type FileMark struct {
	F    SmallFiles
	Make func(ctx context.Context) error
	Open func(ctx context.Context) error
}

func (m FileMark) MakeStore(ctx context.Context) error { return m.Make(ctx) }

// ReadMark reads the mark: none when the store has no internal folder or no mark yet.
func (m FileMark) ReadMark(ctx context.Context) ([]byte, string, error) {
	if err := m.Open(ctx); err != nil {
		return nil, "", err
	}
	d, err := m.F.OpenSmall("", false)
	if err != nil || d == nil {
		return nil, "", err
	}
	defer d.Close()
	b, err := d.Read(MarkName, markMax)
	return b, "", err
}

// ReplaceMark puts body as the mark, whole.
func (m FileMark) ReplaceMark(_ context.Context, body []byte, _ string) error {
	d, err := m.F.OpenSmall("", true)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Replace(MarkName, body)
}
