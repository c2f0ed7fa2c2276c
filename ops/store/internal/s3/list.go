package s3

import (
	"context"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// List returns every upload, the rules written once (store.ListOn) over the primitives below:
// one ListObjectsV2 walk of the prefix, which shows every upload's objects with their sizes (a
// HEAD of each finished upload, and a GET of each marker, which carries the last use), and one
// listing of the multipart uploads; an unfinished upload is read from them (store.ReadUnfinished)
// with a GET of its info, when it has one, and a listing of a stream's parts.
func (s *Store) List(ctx context.Context) (*store.Listing, error) {
	return store.ListOn(ctx, &listRun{s: s})
}

// listJobs is how many requests a listing has in flight at once (round trips, not work).
const listJobs = 16

// listRun is one List's store.ListBackend: what the walk of the prefix showed, by the top name
// (an id's folder, or a partial's) it is under, and the multipart uploads of each id.
type listRun struct {
	s          *Store
	top, parts map[string]*listed
	mps        map[string][]multipart
}

// listed is what a listing showed under one name: an object of that name, and the objects under
// it in key order, named from inside it. Under an upload id (P/<id>/), read says what they are.
type listed struct {
	obj  bool
	objs []listedObj
}

// listedObj is an object as listed, its version the ETag as the listing gives it (quoted).
type listedObj struct {
	store.FolderObject
	key string
}

// add takes in the object o of the listing, named n from inside l's folder.
func (l *listed) add(n string, o types.Object) {
	l.objs = append(l.objs, listedObj{store.FolderObject{Name: n, Size: aws.ToInt64(o.Size), At: aws.ToTime(o.LastModified).UTC(),
		Version: aws.ToString(o.ETag)}, aws.ToString(o.Key)})
}

// under is the objects of l under its folder dir, by their paths from it.
func (l *listed) under(dir string) map[string]listedObj {
	held := map[string]listedObj{}
	for _, o := range l.objs {
		if rel, ok := strings.CutPrefix(o.Name, dir+"/"); ok {
			held[rel] = o
		}
	}
	return held
}

// folder is the objects of l as the store's rules read them (l nil, or none: nil).
func (l *listed) folder() []store.FolderObject {
	var objs []store.FolderObject
	if l == nil {
		return nil
	}
	for _, o := range l.objs {
		objs = append(objs, o.FolderObject)
	}
	return objs
}

// read is what the objects of an upload id's folder say it holds (l nil: none), one reading for
// List, MarkUsed, the sweep's re-check and Info.
func (l *listed) read() store.UploadFolder { return store.ReadUploadFolder(l.folder()) }

// walk files every object under prefix by its top name.
func (r *listRun) walk(ctx context.Context, prefix string) error {
	root, partials := r.s.root(), internalDir+"/partial/"
	r.top, r.parts = map[string]*listed{}, map[string]*listed{}
	return r.s.listObjects(ctx, prefix, func(o types.Object) error {
		into, rel := r.top, strings.TrimPrefix(aws.ToString(o.Key), root)
		if p, ok := strings.CutPrefix(rel, partials); ok {
			into, rel = r.parts, p
		} else if strings.HasPrefix(rel, internalDir+"/") {
			return nil
		}
		name, rest, dir := strings.Cut(rel, "/")
		l := into[name]
		if l == nil {
			l = &listed{}
			into[name] = l
		}
		l.obj = l.obj || !dir
		if dir {
			l.add(rest, o)
		}
		return nil
	})
}

// topEntries are the names of into, sorted: a name that is both an object and a folder is both.
func topEntries(into map[string]*listed) []store.TopEntry {
	var ents []store.TopEntry
	for name, l := range into {
		if l.obj {
			ents = append(ents, store.TopEntry{Name: name})
		}
		if len(l.objs) > 0 {
			ents = append(ents, store.TopEntry{Name: name, Dir: true})
		}
	}
	sort.Slice(ents, func(i, j int) bool {
		return ents[i].Name < ents[j].Name || ents[i].Name == ents[j].Name && !ents[i].Dir
	})
	return ents
}

func (r *listRun) ListProperties() store.ListProperties {
	return store.ListProperties{Jobs: listJobs, FolderSlash: true}
}

// where names a place in the store in a Skip.
func (r *listRun) where(key string) string {
	return strings.TrimSuffix("s3://"+r.s.Bucket+"/"+key, "/")
}

// ListTop walks the prefix once, the partials kept for ListPartials.
func (r *listRun) ListTop(ctx context.Context) ([]store.TopEntry, string, bool, error) {
	s, where := r.s, r.where(r.s.root())
	ok, err := s.checkStore(ctx, false)
	if err != nil || !ok {
		return nil, where, false, err
	}
	if err := r.walk(ctx, s.root()); err != nil {
		return nil, where, false, s.wrap(fault.StoreUnreachable, "list", err)
	}
	return topEntries(r.top), where, true, nil
}

// ReadUpload reads the metadata of the finished upload c as the walk showed it
// (store.FolderUpload).
func (r *listRun) ReadUpload(ctx context.Context, c store.Candidate) (*store.UploadMeta, error) {
	return store.FolderUpload(ctx, folders{objects{r.s}}, c.ID, r.s.URI, r.top[c.ID].read())
}

// treeMeta reads what a folder upload's listing and .upload.json say, for store.Recognize.
func (s *Store) treeMeta(ctx context.Context, id string) (*store.UploadMeta, error) {
	th, err := s.headTree(ctx, id)
	if err != nil {
		return nil, err
	}
	var o object
	if th != nil {
		if o, err = s.readObjectUpTo(ctx, s.treeMetaKey(id), int64(store.TreeObjectMax)+1); err != nil {
			return nil, s.uploadErr(id, err)
		}
	}
	return store.FolderUploadMeta(id, store.MetaName, o.body, th)
}

// ListPartials names the unfinished uploads (store.UnfinishedTop): those with a folder under the
// partials, and those with none: the files of a folder upload, and multipart uploads.
func (r *listRun) ListPartials(ctx context.Context) ([]store.TopEntry, string, error) {
	where := r.where(r.s.key(internalDir, "partial"))
	mps, err := r.s.multiparts(ctx, r.s.root())
	if err != nil {
		return nil, where, err
	}
	folders := map[string][]store.FolderObject{}
	for id, l := range r.top {
		folders[id] = l.folder()
	}
	r.mps = map[string][]multipart{}
	for _, mp := range mps {
		r.mps[mp.id] = append(r.mps[mp.id], mp)
	}
	return store.UnfinishedTop(topEntries(r.parts), folders, slices.Collect(maps.Keys(r.mps))), where, nil
}

// ReadPartial reads the unfinished upload id as the walk and the listing of multipart uploads
// showed it: upload.missing when they show none.
func (r *listRun) ReadPartial(ctx context.Context, id string) (store.UnfinishedState, error) {
	u, _, err := r.s.unfinished(ctx, id, r.top[id], r.parts[id], r.mps[id])
	return u.State, err
}

// unfinished reads the unfinished upload id (store.ReadUnfinishedNow) from what walks of P/<id>/
// (l) and of its partial (p) showed (nil: nothing), and its multipart uploads (mps): its info, when
// the walk showed one, and the parts of a stream's multipart upload: upload.missing when they show
// none. pi is its info when it is read as an upload with one.
func (s *Store) unfinished(ctx context.Context, id string, l, p *listed, mps []multipart) (store.Unfinished, *partialInfo, error) {
	o := store.UnfinishedObjects{Partial: p.folder(), Folder: l.folder()}
	for _, mp := range mps {
		o.Multiparts = append(o.Multiparts, store.FolderObject{Name: mp.name, At: mp.initiated})
	}
	var pi *partialInfo
	u, err := store.ReadUnfinishedNow(ctx, id, s.URI, o, func(ctx context.Context) (*store.PartialInfo, error) {
		var err error
		if pi, err = s.readInfo(ctx, id); err != nil {
			return nil, err
		}
		return &store.PartialInfo{PartialOf: pi.Of(), Size: pi.Size, Made: parseTime(pi.Made)}, nil
	}, func(ctx context.Context) ([]store.FolderObject, error) {
		if pi.UploadID == "" {
			return nil, nil
		}
		ps, err := s.parts(ctx, id, pi.Name, pi.UploadID)
		var objs []store.FolderObject
		for _, p := range ps {
			objs = append(objs, store.FolderObject{Size: p.Size, At: p.Modified})
		}
		return objs, err
	})
	if err != nil || u.Holds != store.UnfinishedInfo {
		pi = nil
	}
	return u, pi, err
}

// unfinishedNow reads the unfinished upload id as the server holds it now: l what a walk of
// P/<id>/ shows, its partial walked here, and its multipart uploads listed when asked for.
func (s *Store) unfinishedNow(ctx context.Context, id string, l *listed, multiparts bool) (store.Unfinished, *partialInfo, error) {
	p, err := s.walkPartial(ctx, id)
	var mps []multipart
	if err == nil && multiparts {
		mps, err = s.multiparts(ctx, s.key(id)+"/")
	}
	if err != nil {
		return store.Unfinished{}, nil, err
	}
	return s.unfinished(ctx, id, l, p, mps)
}

// walkID is what a walk of P/<id>/ shows.
func (s *Store) walkID(ctx context.Context, id string) (*listed, error) {
	r := &listRun{s: s}
	err := r.walk(ctx, s.key(id)+"/")
	if r.top[id] == nil {
		r.top[id] = &listed{}
	}
	return r.top[id], s.wrap(fault.UploadUnreadable, "upload "+id, err)
}

// walkPartial is what a walk of the partial of id shows (nil: nothing).
func (s *Store) walkPartial(ctx context.Context, id string) (*listed, error) {
	r := &listRun{s: s}
	err := r.walk(ctx, s.partialDir(id))
	return r.parts[id], s.wrap(fault.UploadUnreadable, "upload "+id, err)
}
