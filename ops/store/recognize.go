package store

import (
	"context"
	"strings"
	"sync"
	"time"

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

// Candidate is an entry where a backend keeps finished uploads, named by an upload id: what
// RecognizeUploads judges.
type Candidate struct {
	ID   string
	Path string // where it is, to name it in a Skip
}

// UploadMeta is what a backend read of a candidate's metadata, for Recognize.
type UploadMeta struct {
	Info     *Info
	Recorded string // the id the metadata records
	NoID     bool   // the backend keeps no id beside the bytes (see Recognize)
	// Listed is the BLAKE3 a folder upload's listing (TreeListName) names, which its metadata
	// must name too ("": the backend checked it itself, or a file upload).
	Listed   string
	LastUsed time.Time
	Folder   bool // a folder upload, of Files files (its metadata's kind and files)
	Files    int
	// ForeignMarker: its marker is not one the store wrote (its time taken as a use): named.
	ForeignMarker bool
	// Tombstone: there is no upload, only the marker a sweep left on its way out: no upload and
	// no skip, a Leftover the next sweep removes.
	Tombstone bool
}

// RecognizeUploads is the one rule of what is an upload of this store, applied to every finished
// candidate a backend listed: read (jobs at once) reads the metadata of cands[i] as the backend
// keeps it, and Recognize judges it. It returns, by candidate, the metadata of each upload (nil
// for what is not one), and a Skip naming each candidate that is not an upload of this store. A
// candidate gone since it was listed (upload.missing) is neither; any failure other than
// upload.unreadable (a store that does not answer) stops the listing and is returned.
func RecognizeUploads(ctx context.Context, cands []Candidate, jobs int, read func(ctx context.Context, i int) (*UploadMeta, error)) ([]*UploadMeta, []Skip, error) {
	metas := make([]*UploadMeta, len(cands))
	why := make([]error, len(cands))
	var (
		mu    sync.Mutex
		first error
		next  = make(chan int)
		wg    sync.WaitGroup
	)
	for w := 0; w < min(max(jobs, 1), len(cands)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				m, err := read(ctx, i)
				if err == nil {
					if m == nil {
						m = &UploadMeta{}
					}
					err = Recognize(cands[i].ID, m.Recorded, m.NoID, m.Info)
					if err == nil && m.Listed != "" && m.Listed != m.Info.Blake3 {
						err = fault.Errorf(fault.UploadUnreadable, "upload %s: %s and %s name other BLAKE3s", cands[i].ID, MetaName, TreeListName)
					}
				}
				switch c := fault.CodeOf(err); {
				case err == nil:
					metas[i] = m
				case c == fault.UploadUnreadable || c == fault.UploadMissing:
					why[i] = err
				default:
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range cands {
		mu.Lock()
		stop := first != nil
		mu.Unlock()
		if stop || ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	if first != nil {
		return nil, nil, first
	}
	var skips []Skip
	for i, err := range why {
		if err != nil && fault.CodeOf(err) != fault.UploadMissing {
			msg := "not an upload of this store: " + fault.AsError(err, fault.UploadUnreadable).Message
			skips = append(skips, Skip{Path: cands[i].Path, Why: msg})
		}
	}
	return metas, skips, nil
}

// Where a backend keeps an upload as objects under its id, each named by its path from the id's
// folder (S3: PREFIX/<id>/...), which upload the id holds is read from the names of its objects
// alone, one rule (ReadUploadFolder; docs/store.md, "Folder uploads on S3"): a folder upload is
// finished once its listing (TreeListName), written last, is there beside its metadata
// (MetaName); an object of a plain name beside neither is a file upload, which never holds
// MetaName (so one named TreeListName is a file upload by its names: only its own metadata tells
// it from the listing of a folder upload whose MetaName was removed, which is no upload); the
// objects of a folder upload that is not finished are an unfinished one's, or what a kill left;
// a sweep's tombstone alone is what a sweep that died left, a Leftover; anything else holds no
// upload. The marker among them (UsedName) is told used or tombstone by its size (UsedMarkSize,
// TombstoneMarkSize), without reading it.

// Holding is what an upload id's folder holds, as the names of its objects say.
type Holding int

const (
	HoldsNothing          Holding = iota // no object of an upload: others', or a marker alone
	HoldsFile                            // a finished file upload
	HoldsFolder                          // a finished folder upload
	HoldsUnfinishedFolder                // a folder upload's objects, not finished
	HoldsTombstone                       // a sweep's tombstone alone
)

// FolderObject is an object under an upload id, as a listing shows it.
type FolderObject struct {
	Name    string // its path from the id's folder
	Size    int64
	At      time.Time // when it was written
	Version string    // as listed (S3: its ETag), what a marker's conditional write is over
}

// UploadFolder is what the objects of an upload id's folder say it holds (ReadUploadFolder).
type UploadFolder struct {
	Holds Holding
	// Name is a finished upload's name ("" for an empty folder upload: only its listing's own
	// metadata names it), or an unfinished folder upload's folder, from its files' paths.
	Name string
	// When the first and the last of the folder upload's objects (its files, listing and
	// metadata) were written: an unfinished one was begun and last written then.
	First, Last time.Time
	// Mark is its marker as listed: there, a tombstone or not, its version; its time unread.
	// MarkOdd: a marker whose size says neither kind, which only reading it tells.
	Mark    UseMark
	MarkOdd bool
}

// ReadUploadFolder reads the objects of an upload id's folder (see above).
func ReadUploadFolder(objs []FolderObject) UploadFolder {
	var f UploadFolder
	file, dir, list, meta, tree := "", "", false, false, false
	for _, o := range objs {
		n := o.Name
		if n == UsedName {
			f.Mark = UseMark{Exists: true, Version: o.Version, Tombstone: o.Size == int64(TombstoneMarkSize)}
			f.MarkOdd = o.Size != int64(UsedMarkSize) && !f.Mark.Tombstone
		}
		if n == MetaName || n == TreeListName || strings.Contains(n, "/") {
			tree = true
			if f.First.IsZero() || o.At.Before(f.First) {
				f.First = o.At
			}
			if o.At.After(f.Last) {
				f.Last = o.At
			}
		}
		switch {
		case n == MetaName:
			meta = true
		case strings.Contains(n, "/"):
			if d, _, _ := strings.Cut(n, "/"); dir == "" && ValidTreeName(d) == nil {
				dir = d
			}
		case file == "" && ValidName(n) == nil:
			list = list || n == TreeListName
			file = n
		case n == TreeListName:
			list = true
		}
	}
	switch {
	case list && meta:
		f.Holds, f.Name = HoldsFolder, dir
	case file != "":
		f.Holds, f.Name = HoldsFile, file
	case tree:
		f.Holds, f.Name = HoldsUnfinishedFolder, dir
	case f.Mark.Tombstone && len(objs) == 1:
		f.Holds = HoldsTombstone
	}
	return f
}

// Finished is the finished upload the folder holds: its name ("" when none, or an empty folder
// upload's) and whether it is a folder upload.
func (f UploadFolder) Finished() (name string, folder bool) {
	if f.Holds == HoldsFile || f.Holds == HoldsFolder {
		return f.Name, f.Holds == HoldsFolder
	}
	return "", false
}

// Still tells whether the folder holds what the listing's entry e named: its finished upload
// (one of e's name, for a file upload), or, e unfinished, no finished upload (an unfinished
// upload finished since it was listed is gone: what is left of it is the finish's).
func (f UploadFolder) Still(e Entry) bool {
	name, folder := f.Finished()
	if !e.Finished {
		return name == "" && !folder
	}
	return folder || name != "" && name == e.Name
}

// Nested is the refusal of the store loc whose place lies why ("inside the store", "inside the
// upload", "inside the internal folder of the store") outer: a store is never inside another
// store or an upload, whose sweep would take the inner store's uploads for its own entries.
func Nested(loc, why, outer string) error {
	return fault.Errorf(fault.StoreNotStore, "store %s: is %s %s; a store is never inside another store or an upload; nothing was written", loc, why, outer)
}
