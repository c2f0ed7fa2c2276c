package store

import (
	"encoding/json"
	"errors"
	"slices"
	"time"
)

// An unfinished upload that a backend keeps as a folder of its own, its writer holding a lock on
// it (the local store's .attachctl/partial/<id>/), says what it is in one small JSON file, its
// info (PartialMeta), written when it is begun and read again under the lock. The runs of an
// upload stage share such an upload by its source's path, one run at a time (TakePartial).

// PartialMeta is such an unfinished upload's info.
type PartialMeta struct {
	Name    string         `json:"name"`
	Size    int64          `json:"size"` // declared size, -1 while open
	Created time.Time      `json:"created"`
	Source  *PartialSource `json:"source,omitempty"`
	Folder  bool           `json:"folder,omitempty"` // a folder upload's: finished only by its stage
	Batch   bool           `json:"batch,omitempty"`  // a batch's staging partial
}

// PartialSource names the source an upload stage run copies, so that a later run of the same
// command finds it.
type PartialSource struct {
	Path   string `json:"path"`   // absolute
	Blake3 string `json:"blake3"` // the record's, "" when unknown (sniff --no-hash)
	Size   int64  `json:"size"`
}

// Of is what the upload was begun for, as Resumes and the step-by-step upload read it: a folder
// upload's or a file's by a stream (each names its source), a batch's staging, or none of them (a
// step-by-step upload's).
func (m *PartialMeta) Of() PartialOf {
	of := PartialOf{Name: m.Name, Folder: m.Folder, Batch: m.Batch, Streamed: !m.Folder && !m.Batch && m.Source != nil}
	if m.Source != nil {
		of.Path, of.Blake3 = m.Source.Path, m.Source.Blake3
	}
	return of
}

// File is the info as its file holds it: one line of JSON.
func (m *PartialMeta) File() []byte {
	b, _ := json.Marshal(m) // of strings, numbers and a time: never fails
	return append(b, '\n')
}

// ErrPartialDamaged: an info that is not JSON, or whose name or size no upload is begun with.
var ErrPartialDamaged = errors.New("damaged")

// ParsePartialMeta reads an info from its file's bytes b: ErrPartialDamaged when it is not one.
func ParsePartialMeta(b []byte) (*PartialMeta, error) {
	var m PartialMeta
	if json.Unmarshal(b, &m) != nil || CheckBegin(m.Name, m.Size) != nil {
		return nil, ErrPartialDamaged
	}
	return &m, nil
}

// HeldPartial is an unfinished upload a backend holds locked, its info read under the lock.
type HeldPartial interface {
	ID() string
	// Meta is its info as read under the lock; WriteMeta writes it, changed, durably in its place.
	Meta() *PartialMeta
	WriteMeta() error
	// Close releases the lock.
	Close()
}

// PartialTaker is what a backend whose unfinished uploads are held by a lock implements so that
// TakePartial runs over it; P is its upload held.
type PartialTaker[P HeldPartial] interface {
	PartialLister
	// TryLockPartial takes the unfinished upload id without waiting: an error when another
	// process holds it, or it is gone or cannot be read.
	TryLockPartial(id string) (P, error)
	// BeginPartial makes a new unfinished upload of the info m (begun now when m.Created is zero),
	// admitted against the store's limits, and holds it.
	BeginPartial(m PartialMeta) (P, error)
}

// TakePartial takes up the first unfinished upload that a run of run resumes (Resumes, by the
// source's path: the lock keeps one run at a time) and no one else holds: a folder's among all of
// b's partials, the oldest first (their ids are UUIDv7s); a file's among those idx holds, whose
// info named this source when it was read. Its info is read before the lock (another source's
// upload is not locked) and again under it (the holder before may have rewritten it), and it is
// keyed again to the source of size bytes; old is the source its data was written for. If none,
// it begins one (old nil), noted in idx when it is a file's.
func TakePartial[P HeldPartial](b PartialTaker[P], idx *PartialIndex, run PartialOf, size int64) (p P, old *PartialSource, err error) {
	var ids []string
	if run.Folder {
		ids, err = b.PartialIDs()
		slices.Sort(ids)
	} else {
		ids, err = idx.Of(b, run.Path, run.Name)
	}
	if err != nil {
		return p, nil, err
	}
	key := PartialSource{Path: run.Path, Blake3: run.Blake3, Size: size}
	for _, id := range ids {
		if of, _, err := b.PartialOf(id); err != nil || !Resumes(of, run, false) {
			continue
		}
		q, err := b.TryLockPartial(id)
		if err != nil {
			continue // held by another process, or gone
		}
		m := q.Meta()
		if !Resumes(m.Of(), run, false) {
			q.Close()
			continue
		}
		was := *m.Source
		if was != key || m.Size != size {
			m.Size, m.Source = size, &key
			if err := q.WriteMeta(); err != nil {
				q.Close()
				return p, nil, err
			}
		}
		return q, &was, nil
	}
	if p, err = b.BeginPartial(PartialMeta{Name: run.Name, Size: size, Source: &key, Folder: run.Folder}); err == nil && !run.Folder {
		idx.Note(key.Path, run.Name, p.ID())
	}
	return p, nil, err
}
