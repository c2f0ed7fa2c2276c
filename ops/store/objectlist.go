package store

import (
	"context"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// Where a backend keeps its uploads as objects (S3), all it lists is the objects under a key
// prefix, a page of them, and the multipart uploads begun under a prefix (ObjectLister). How those
// objects are grouped by the upload id or the partial they lie under, which of them a listing
// passes over, and what the listing of the store, of one id's folder or of one unfinished upload
// says (ObjectUploads) is written here once; the backend only makes the requests.

// ObjectLister is what a backend that keeps its uploads as objects lists. Keys and prefixes are
// from the store's top, as Objects takes them; an error that carries no code is given the
// caller's (objectErr).
type ObjectLister interface {
	// ListObjects calls each for every object whose key starts with prefix, in key order, named
	// by its key (its Version as listed: S3's quoted ETag).
	ListObjects(ctx context.Context, prefix string, each func(FolderObject) error) error
	// ListPage lists, in key order, at most n of the objects whose key starts with prefix and
	// sorts after start, named so, and whether more follow.
	ListPage(ctx context.Context, prefix, start string, n int) (objs []FolderObject, more bool, err error)
	// Multiparts lists the multipart uploads begun under prefix that write a file of an upload
	// (MultipartOf), in the order listed.
	Multiparts(ctx context.Context, prefix string) ([]Multipart, error)
}

// Multipart is a multipart upload in progress under a store.
type Multipart struct {
	ID, Name      string    // the upload id and the file it writes (MultipartOf)
	At            time.Time // when it was begun
	Key, UploadID string    // the backend's own names of it, to abort it
}

// ObjectFolder is what a listing showed under one name at the store's top or among its partials:
// an object of that name (Obj), and the objects under it in key order, named from inside it.
type ObjectFolder struct {
	Obj  bool
	Objs []FolderObject
}

// Objects is the objects under f (nil: none).
func (f *ObjectFolder) Objects() []FolderObject {
	if f == nil {
		return nil
	}
	return f.Objs
}

// Under is the objects of f under its folder dir, by their paths from it.
func (f *ObjectFolder) Under(dir string) map[string]FolderObject {
	held := map[string]FolderObject{}
	for _, o := range f.Objects() {
		if rel, ok := strings.CutPrefix(o.Name, dir+"/"); ok {
			held[rel] = o
		}
	}
	return held
}

// Read is what the objects of an upload id's folder say it holds (f nil: none), one reading for
// the listing, a use, the sweep's re-check and Info.
func (f *ObjectFolder) Read() UploadFolder { return ReadUploadFolder(f.Objects()) }

// objectWalk is what one walk of a prefix showed, by the name each object lies under: an id's
// folder at the store's top (top), or a partial (parts). The rest of the store's internal folder
// (its mark, notes, reservations, locks) is no upload's, and passed over.
type objectWalk struct{ top, parts map[string]*ObjectFolder }

func walkObjects(ctx context.Context, l ObjectLister, prefix string) (objectWalk, error) {
	w := objectWalk{top: map[string]*ObjectFolder{}, parts: map[string]*ObjectFolder{}}
	err := l.ListObjects(ctx, prefix, func(o FolderObject) error {
		into, rel := w.top, o.Name
		if p, ok := strings.CutPrefix(rel, InternalDir+"/partial/"); ok {
			into, rel = w.parts, p
		} else if strings.HasPrefix(rel, InternalDir+"/") {
			return nil
		}
		name, rest, dir := strings.Cut(rel, "/")
		f := into[name]
		if f == nil {
			f = &ObjectFolder{}
			into[name] = f
		}
		f.Obj = f.Obj || !dir
		if dir {
			o.Name = rest
			f.Objs = append(f.Objs, o)
		}
		return nil
	})
	return w, err
}

// objectTop are the names of into, sorted: a name that is both an object and a folder is both.
func objectTop(into map[string]*ObjectFolder) []TopEntry {
	var ents []TopEntry
	for name, f := range into {
		if f.Obj {
			ents = append(ents, TopEntry{Name: name})
		}
		if len(f.Objs) > 0 {
			ents = append(ents, TopEntry{Name: name, Dir: true})
		}
	}
	sort.Slice(ents, func(i, j int) bool {
		return ents[i].Name < ents[j].Name || ents[i].Name == ents[j].Name && !ents[i].Dir
	})
	return ents
}

// ObjectUploads is the uploads of a store kept as objects, read over the backend's listing (L)
// and its reads of an id's folder and of its small objects (R).
type ObjectUploads struct {
	L   ObjectLister
	R   FolderReader
	Loc string // the store, for messages
	// Where names a key (a prefix: "" the store's top) in a Skip and in verify's messages.
	Where func(key string) string
	// Check tells whether the store is there (its mark, or nothing: false), as Judge reads it.
	Check func(ctx context.Context) (bool, error)
	// Jobs is how many requests a listing has in flight at once (round trips, not work).
	Jobs int
	// MinPage and MaxPage bound the page a look-up of many ids asks for (ListPage): room for a
	// few objects per id still wanted, never more than the server gives at once.
	MinPage, MaxPage int
	// Info reads the info of the unfinished upload id (ReadInfo): what it says, and what its
	// removal needs of it.
	Info func(ctx context.Context, id string) (*PartialInfo, *DroppedInfo, error)
	// Parts lists the parts of the multipart upload uploadID writing the file name of the upload
	// id (a stream's): their sizes and times; upload.missing when it is not there any more.
	Parts func(ctx context.Context, id, name, uploadID string) ([]FolderObject, error)

	opened sync.Map // the finished folder uploads FinishedTree found: id → their name
}

// List returns every upload, the rules written once (ListOn): one walk of the store shows every
// upload's objects with their sizes (a HEAD of each finished upload, and a GET of each marker,
// which carries the last use, follow), and one listing of the multipart uploads; an unfinished
// upload is read from them (ReadUnfinishedNow) with a GET of its info, when it has one, and a
// listing of a stream's parts.
func (u *ObjectUploads) List(ctx context.Context) (*Listing, error) {
	return ListOn(ctx, &objectList{u: u})
}

// objectList is one List's ListBackend: what the walk of the store showed, and the multipart
// uploads of each id.
type objectList struct {
	u   *ObjectUploads
	w   objectWalk
	mps map[string][]Multipart
}

func (r *objectList) ListProperties() ListProperties {
	return ListProperties{Jobs: r.u.Jobs, FolderSlash: true}
}

// ListTop walks the store once, the partials kept for ListPartials.
func (r *objectList) ListTop(ctx context.Context) ([]TopEntry, string, bool, error) {
	where := r.u.Where("")
	ok, err := r.u.Check(ctx)
	if err != nil || !ok {
		return nil, where, false, err
	}
	if r.w, err = walkObjects(ctx, r.u.L, ""); err != nil {
		return nil, where, false, objectErr("list", err, fault.StoreUnreachable)
	}
	return objectTop(r.w.top), where, true, nil
}

// ReadUpload reads the finished upload c as the walk showed it (FolderUpload).
func (r *objectList) ReadUpload(ctx context.Context, c Candidate) (*UploadMeta, error) {
	return FolderUpload(ctx, r.u.R, c.ID, r.u.Loc, r.w.top[c.ID].Read())
}

// ListPartials names the unfinished uploads (UnfinishedTop): those with a folder among the
// partials, and those with none: the files of a folder upload, and multipart uploads.
func (r *objectList) ListPartials(ctx context.Context) ([]TopEntry, string, error) {
	where := r.u.Where(InternalDir + "/partial")
	mps, err := r.u.L.Multiparts(ctx, "")
	if err != nil {
		return nil, where, objectErr("list multipart uploads", err, fault.StoreUnreachable)
	}
	folders := map[string][]FolderObject{}
	for id, f := range r.w.top {
		folders[id] = f.Objects()
	}
	r.mps = map[string][]Multipart{}
	for _, mp := range mps {
		r.mps[mp.ID] = append(r.mps[mp.ID], mp)
	}
	return UnfinishedTop(objectTop(r.w.parts), folders, slices.Collect(maps.Keys(r.mps))), where, nil
}

// ReadPartial reads the unfinished upload id as the walk and the listing of multipart uploads
// showed it: upload.missing when they show none.
func (r *objectList) ReadPartial(ctx context.Context, id string) (UnfinishedState, error) {
	u, _, err := r.u.unfinished(ctx, id, r.w.top[id], r.w.parts[id], r.mps[id])
	return u.State, err
}

// unfinished reads the unfinished upload id (ReadUnfinishedNow) from what walks of its id's
// folder (l) and of its partial (p) showed (nil: nothing), and its multipart uploads (mps): its
// info, when the walk showed one, and the parts of a stream's multipart upload: upload.missing
// when they show none. di is what its info names for its removal, when it is read as an upload
// with its info.
func (u *ObjectUploads) unfinished(ctx context.Context, id string, l, p *ObjectFolder, mps []Multipart) (Unfinished, *DroppedInfo, error) {
	o := UnfinishedObjects{Partial: p.Objects(), Folder: l.Objects()}
	for _, mp := range mps {
		o.Multiparts = append(o.Multiparts, FolderObject{Name: mp.Name, At: mp.At})
	}
	var di *DroppedInfo
	un, err := ReadUnfinishedNow(ctx, id, u.Loc, o, func(ctx context.Context) (*PartialInfo, error) {
		pi, d, err := u.Info(ctx, id)
		di = d
		return pi, err
	}, func(ctx context.Context) ([]FolderObject, error) {
		if di.UploadID == "" {
			return nil, nil
		}
		return u.Parts(ctx, id, di.Name, di.UploadID)
	})
	if err != nil || un.Holds != UnfinishedInfo {
		di = nil
	}
	return un, di, err
}

// UnfinishedNow reads the unfinished upload id as the store holds it now: l what a walk of its
// id's folder shows, its partial walked here, and its multipart uploads listed when asked for.
func (u *ObjectUploads) UnfinishedNow(ctx context.Context, id string, l *ObjectFolder, multiparts bool) (Unfinished, *DroppedInfo, error) {
	p, err := u.WalkPartial(ctx, id)
	var mps []Multipart
	if err == nil && multiparts {
		mps, err = u.L.Multiparts(ctx, id+"/")
		err = objectErr("list multipart uploads", err, fault.StoreUnreachable)
	}
	if err != nil {
		return Unfinished{}, nil, err
	}
	return u.unfinished(ctx, id, l, &ObjectFolder{Objs: p}, mps)
}

// PartialStatus reads the unfinished upload id for Status (StatusBackend): one with its info, as
// walks of its id's folder and of its partial show it now.
func (u *ObjectUploads) PartialStatus(ctx context.Context, id string) (UnfinishedState, int64, error) {
	l, err := u.WalkID(ctx, id)
	if err != nil {
		return UnfinishedState{}, 0, err
	}
	un, _, err := u.UnfinishedNow(ctx, id, l, false)
	if err == nil && un.Holds != UnfinishedInfo {
		err = NotUnfinished(id, u.Loc)
	}
	return un.State, un.Size, err
}

// WalkID is what a walk of the folder of the upload id shows.
func (u *ObjectUploads) WalkID(ctx context.Context, id string) (*ObjectFolder, error) {
	w, err := walkObjects(ctx, u.L, id+"/")
	f := w.top[id]
	if f == nil {
		f = &ObjectFolder{}
	}
	return f, objectErr("upload "+id, err, fault.UploadUnreadable)
}

// WalkPartial is the objects of the partial of the upload id, as a walk of it shows them.
func (u *ObjectUploads) WalkPartial(ctx context.Context, id string) ([]FolderObject, error) {
	w, err := walkObjects(ctx, u.L, partialDir(id))
	return w.parts[id].Objects(), objectErr("upload "+id, err, fault.UploadUnreadable)
}

// FinishedInfo is the Info of the finished upload id, as a walk of its folder shows it
// (FolderInfo): the caller checked the id and the store.
func (u *ObjectUploads) FinishedInfo(ctx context.Context, id string) (*Info, error) {
	l, err := u.WalkID(ctx, id)
	if err != nil {
		return nil, err
	}
	return FolderInfo(ctx, u.R, id, u.Loc, l.Read())
}

// FinishedTree checks that the upload id is a finished folder upload named name, before one of
// its files is opened: upload.missing when it is not. Its listing's head is read once per upload
// and run: resolve opens every file of a folder, and a finished upload stays finished until a
// sweep removes it (its objects then answer upload.missing).
func (u *ObjectUploads) FinishedTree(ctx context.Context, id, name string) error {
	known, ok := u.opened.Load(id)
	if !ok {
		th, err := u.R.HeadTree(ctx, id)
		if err != nil {
			return err
		}
		if th != nil {
			known, _ = u.opened.LoadOrStore(id, th.Name)
		}
	}
	if known != any(name) {
		return NotFinished(id, u.Loc)
	}
	return nil
}

// TreeDir is ReadTreeDir of the upload id (FlatList): every object of its folder at once, named
// by its path from there and, for verify's messages, by Where.
func (u *ObjectUploads) TreeDir(ctx context.Context, id string) ([]TreeEntry, error) {
	l, err := u.WalkID(ctx, id)
	if err != nil {
		return nil, err
	}
	es := make([]TreeEntry, 0, len(l.Objs))
	for _, o := range l.Objs {
		es = append(es, TreeEntry{Name: o.Name, File: true, Size: o.Size, Where: u.Where(id + "/" + o.Name)})
	}
	slices.SortFunc(es, func(a, b TreeEntry) int { return strings.Compare(a.Name, b.Name) })
	return es, nil
}
