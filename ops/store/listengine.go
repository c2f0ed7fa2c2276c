package store

import (
	"context"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// Listing a store, written once over a backend's primitives (prim.go says why).
//
// What is a finished upload (an entry named by an upload id that Recognize accepts), an
// unfinished one (an entry of the backend's partials named by an id, not finished since), a batch
// area (an unfinished entry its info marks so), and what is skipped and named (Skip, in the
// wording below on every backend) are this package's rules; so are an unfinished entry's size,
// made and last used (UnfinishedEntry), and the size of an unfinished folder upload, which the
// engine sums over the backend's listing of its tree (TreeBytes): no backend walks a tree.

// The reasons a listing gives for what it skips, one wording on every backend.
const (
	SkipNotID         = "not an upload id"
	SkipLink          = "a symlink"
	SkipNotFolder     = "not a folder"
	SkipNotUnfinished = "not an unfinished upload"
	SkipForeignMarker = "not an attachctl marker: left in place, the upload taken as used when it was written"
)

// TopEntry is one entry where a backend keeps its uploads (the store's top, or its partials), as
// its listing gives it, never following a link.
type TopEntry struct {
	Name string
	Dir  bool // a real folder
	Link bool // a symbolic link
}

// ListProperties are what a backend's listing can do, declared once by the backend.
type ListProperties struct {
	// Jobs is how many uploads are read at once (at least 1).
	Jobs int
	// FolderSlash: the path of a folder in a Skip ends in "/", as the backend writes a folder
	// (S3's prefix stands for every object under it, which the skip names all at once).
	FolderSlash bool
}

// path is how a Skip names the entry e of the place where names.
func (p ListProperties) path(where string, e TopEntry) string {
	if p.FolderSlash && e.Dir {
		return where + "/" + e.Name + "/"
	}
	return where + "/" + e.Name
}

// inside is the path of name in the folder at path (as path names it).
func inside(path, name string) string {
	if len(path) > 0 && path[len(path)-1] == '/' {
		return path + name
	}
	return path + "/" + name
}

// UnfinishedState is what a backend read of one unfinished upload: its info (best effort: zero
// when unreadable) and the file its writer writes.
type UnfinishedState struct {
	Name  string
	Made  time.Time // begun, as its info says
	Batch bool
	// Bytes is what was written so far: what its data holds; a folder upload's, what the files
	// of its tree hold (TreeBytes: its data holds none).
	Bytes int64
	// Written is when its data was last written (its folder's time when it has none); a folder
	// upload's, when its newest file was if that is later (Tree).
	Written time.Time
	Busy    bool // a writer holds it now
}

// UnfinishedEntry is the listing's entry of the unfinished upload id: its size is what was
// written so far, its last use when it was last written, and one whose begin time is not known
// was begun when it was last written.
func UnfinishedEntry(id string, u UnfinishedState) Entry {
	e := Entry{ID: id, Name: u.Name, Size: u.Bytes, Made: u.Made, LastUsed: u.Written, Busy: u.Busy, Batch: u.Batch}
	if e.Made.IsZero() {
		e.Made = e.LastUsed
	}
	return e
}

// StatusBackend is what a backend implements so that Status's rules run over it (StatusOf).
type StatusBackend interface {
	// Info reads a finished upload's metadata: upload.missing when it is not finished.
	Info(ctx context.Context, id string) (*Info, error)
	// PartialStatus reads the unfinished upload id, for UnfinishedEntry, and its declared size
	// (-1: open): upload.missing, with the message Status gives, when it is not there.
	PartialStatus(ctx context.Context, id string) (u UnfinishedState, size int64, err error)
}

// StatusOf is Backend.Status over b: a finished upload's metadata; else an unfinished upload,
// its offset what it has written by the listing's rule (UnfinishedEntry); else, as a finish may
// have published it between the two looks, the finished upload after all.
func StatusOf(ctx context.Context, b StatusBackend, id string) (*Status, error) {
	if err := ValidID(id); err != nil {
		return nil, err
	}
	finished := func(info *Info) *Status {
		return &Status{ID: id, Name: info.Name, Offset: info.Size, Size: info.Size, Finished: true}
	}
	if info, err := b.Info(ctx, id); err == nil {
		return finished(info), nil
	} else if fault.CodeOf(err) != fault.UploadMissing {
		return nil, err
	}
	u, size, err := b.PartialStatus(ctx, id)
	if err == nil {
		return &Status{ID: id, Name: u.Name, Offset: UnfinishedEntry(id, u).Size, Size: size}, nil
	}
	if info, ierr := b.Info(ctx, id); ierr == nil {
		return finished(info), nil
	} else if fault.CodeOf(ierr) == fault.UploadUnreadable {
		return nil, ierr
	}
	return nil, err
}

// TreeBytes is what the files of an unfinished folder upload's tree hold and when the newest of
// them was written (TreeEntry.At; zero: none known), walked as verify walks a finished one
// (readDir lists the folder dir, "" the top, as TreeBackend.ReadTreeDir does; flat: every file at
// once), never entering a folder the backend does not (TreeEntry.Skip). Best effort: a folder
// that cannot be read holds nothing counted.
func TreeBytes(flat bool, readDir func(dir string) ([]TreeEntry, error)) (n int64, newest time.Time) {
	walkTree(flat, func(dir string) ([]TreeEntry, error) {
		es, _ := readDir(dir)
		return es, nil
	}, func(_ string, e TreeEntry) bool {
		if e.File {
			n += e.Size
			newest = later(newest, e.At)
		}
		return e.Skip == ""
	})
	return n, newest
}

// Tree makes u the state of a folder upload whose tree's files hold n bytes, the newest of them
// written at newest (TreeBytes): its data holds none of its bytes, and it was last written when
// that file was, if that is later than what u says.
func (u *UnfinishedState) Tree(n int64, newest time.Time) {
	u.Bytes, u.Written = n, later(u.Written, newest)
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// FolderTreeBytes is TreeBytes of the folder upload name among the objects of its id's folder
// (ReadUploadFolder): the files under name/, as a listing by prefix gives them. A path with an
// empty part is no file of the folder.
func FolderTreeBytes(objs []FolderObject, name string) int64 {
	var es []TreeEntry
	for _, o := range objs {
		rel, ok := strings.CutPrefix(o.Name, name+"/")
		if ok && name != "" && !slices.Contains(strings.Split(rel, "/"), "") {
			es = append(es, TreeEntry{Name: rel, File: true, Size: o.Size})
		}
	}
	n, _ := TreeBytes(true, func(string) ([]TreeEntry, error) { return es, nil })
	return n
}

// Unfinished is the state of the unfinished folder upload f holds when nothing else says more
// (it has no info: a kill left it): named by its folder, begun when its first object was
// written, last written when its newest was, and what the files of its folder hold.
func (f UploadFolder) Unfinished(objs []FolderObject) UnfinishedState {
	return UnfinishedState{Name: f.Name, Made: f.First, Written: f.Last, Bytes: FolderTreeBytes(objs, f.Name)}
}

// ListBackend is what a backend implements so that List, written once in this package (ListOn),
// runs over it.
type ListBackend interface {
	ListProperties() ListProperties
	// ListTop lists the store's top, sorted by name; there is false for a store that does not
	// exist (empty: nothing else is asked). where names the top in Skips (a path).
	ListTop(ctx context.Context) (ents []TopEntry, where string, there bool, err error)
	// ReadUpload reads the metadata of the finished upload c for Recognize (a failure that
	// keeps it from reading as an upload is upload.unreadable: skipped, never the listing's).
	ReadUpload(ctx context.Context, c Candidate) (*UploadMeta, error)
	// ListPartials lists where unfinished uploads are kept (sorted by name; nil when there is
	// no such place yet), and where names it.
	ListPartials(ctx context.Context) (ents []TopEntry, where string, err error)
	// ReadPartial reads the unfinished upload id: upload.missing when it is not there any more
	// (finished or removed since it was listed); another error is named in its Skip, but one of
	// a store that does not answer (a code other than upload.unreadable) stops the listing.
	ReadPartial(ctx context.Context, id string) (UnfinishedState, error)
}

// ListOn is Backend.List over b: every finished upload (recognised), every unfinished one that
// is not finished since, in id order, and what was skipped, in path order. A marker the store did
// not write beside an upload is named (SkipForeignMarker); a marker with no upload is no upload,
// named as any other (RecognizeUploads). What killed runs left under an id, a partial beside the
// finished upload of its id and a sweep's marker with no upload beside it (UploadMeta.Tombstone),
// is neither: it is in the Leftovers, for a sweep to remove.
func ListOn(ctx context.Context, b ListBackend) (*Listing, error) {
	p := b.ListProperties()
	l := &Listing{}
	top, where, there, err := b.ListTop(ctx)
	if err != nil || !there {
		return l, err
	}
	var cands []Candidate
	for _, e := range top {
		path := p.path(where, e)
		switch {
		case e.Name == InternalDir && e.Dir:
		case ValidID(e.Name) != nil:
			l.Skipped = append(l.Skipped, Skip{Path: path, Why: SkipNotID})
		case e.Link:
			l.Skipped = append(l.Skipped, Skip{Path: path, Why: SkipLink})
		case !e.Dir:
			l.Skipped = append(l.Skipped, Skip{Path: path, Why: SkipNotFolder})
		default:
			cands = append(cands, Candidate{ID: e.Name, Path: path})
		}
	}
	tomb := make([]bool, len(cands)) // each read writes its own
	metas, skips, err := RecognizeUploads(ctx, cands, p.Jobs, func(ctx context.Context, i int) (*UploadMeta, error) {
		m, err := b.ReadUpload(ctx, cands[i])
		if err == nil && m != nil && m.Tombstone {
			tomb[i] = true
			return nil, fault.Errorf(fault.UploadMissing, "upload %s: only a sweep's tombstone", cands[i].ID)
		}
		return m, err
	})
	if err != nil {
		return nil, err
	}
	l.Skipped = append(l.Skipped, skips...)
	finished := map[string]bool{}
	for i, m := range metas {
		if m != nil {
			id := cands[i].ID
			l.Entries = append(l.Entries, Entry{ID: id, Name: m.Info.Name, Size: m.Info.Size, Finished: true, Made: m.Info.Made, LastUsed: m.LastUsed,
				Blake3: m.Info.Blake3, Folder: m.Folder, Files: m.Files})
			finished[id] = true
			if m.ForeignMarker {
				l.Skipped = append(l.Skipped, Skip{Path: inside(cands[i].Path, UsedName), Why: SkipForeignMarker})
			}
		}
	}
	parts, where, err := b.ListPartials(ctx)
	if err != nil {
		return nil, err
	}
	for _, e := range parts {
		path := p.path(where, e)
		if ValidID(e.Name) != nil || !e.Dir || e.Link {
			l.Skipped = append(l.Skipped, Skip{Path: path, Why: SkipNotUnfinished})
			continue
		}
		// A partial beside the finished upload of its id is what a finish killed after its
		// publish left: no upload.
		if finished[e.Name] {
			l.Leftovers = append(l.Leftovers, Leftover{ID: e.Name, Partial: true})
			continue
		}
		u, err := b.ReadPartial(ctx, e.Name)
		switch c := fault.CodeOf(err); {
		case c == fault.UploadMissing:
		case err != nil && c != "" && c != fault.UploadUnreadable:
			return nil, err
		case err != nil:
			l.Skipped = append(l.Skipped, Skip{Path: path, Why: "unfinished upload: " + err.Error()})
		default:
			l.Entries = append(l.Entries, UnfinishedEntry(e.Name, u))
		}
	}
	for i, c := range cands {
		if tomb[i] {
			l.Leftovers = append(l.Leftovers, Leftover{ID: c.ID})
		}
	}
	SortListing(l)
	return l, nil
}

// SortListing puts a listing in its order: entries by id, skips by path.
func SortListing(l *Listing) {
	sort.Slice(l.Entries, func(i, j int) bool { return l.Entries[i].ID < l.Entries[j].ID })
	sort.SliceStable(l.Skipped, func(i, j int) bool { return l.Skipped[i].Path < l.Skipped[j].Path })
}
