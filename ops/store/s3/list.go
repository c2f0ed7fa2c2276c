package s3

import (
	"context"
	"sort"
	"strings"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// List returns every upload, the rules written once (store.ListOn) over the primitives below:
// one ListObjectsV2 walk of the prefix, which shows every upload's objects with their sizes (a
// HEAD of each finished upload, and a GET of each marker, which carries the last use); unfinished
// uploads from their info objects, the files of a folder upload with no info (a sweep killed while
// it removed it, or a stage killed as it began), and multipart uploads that have none (a stage
// killed between starting one and writing its info).
func (s *Store) List(ctx context.Context) (*store.Listing, error) {
	r := &listRun{s: s}
	l, err := store.ListOn(ctx, r)
	if err != nil {
		return l, err
	}
	s.treesMu.Lock()
	if s.trees == nil {
		s.trees = map[string]bool{}
	}
	for _, e := range l.Entries {
		if e.Finished {
			_, tree := r.top[e.ID].f.upload()
			s.trees[e.ID] = tree
		}
	}
	s.treesMu.Unlock()
	return l, nil
}

// listJobs is how many requests a listing has in flight at once (round trips, not work).
const listJobs = 16

// listRun is one List's store.ListBackend: what the walk of the prefix showed, by the name of the
// top folder (or object) it is under.
type listRun struct {
	s          *Store
	top, parts map[string]*listed
	mps        map[string]multipart // by id: the first of its multipart uploads
}

// listed is what the walk showed under one name: an object of that name, and the objects under
// it as a folder, in key order, named from inside it.
type listed struct {
	obj  bool
	objs []listedObj
	f    folder // the objects as an upload's folder
}

type listedObj struct {
	name string
	size int64
}

// take adds the object o, at rel below the place the listing is of.
func take(into map[string]*listed, rel string, o types.Object) {
	name, rest, dir := strings.Cut(rel, "/")
	l := into[name]
	if l == nil {
		l = &listed{}
		into[name] = l
	}
	if !dir {
		l.obj = true
		return
	}
	l.objs = append(l.objs, listedObj{name: rest, size: aws.ToInt64(o.Size)})
	l.f.note(rest, o)
}

// topEntries are the names of into as the listing engine takes them, sorted: a name that is both
// an object and a folder is both entries.
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
	return store.ListProperties{Jobs: listJobs, Internal: internalDir, FolderSlash: true}
}

// where names a place in the store in a Skip.
func (r *listRun) where(key string) string {
	return strings.TrimSuffix("s3://"+r.s.Bucket+"/"+key, "/")
}

// ListTop walks the prefix once; the partials are kept for ListPartials, the store's own objects
// besides them are left out.
func (r *listRun) ListTop(ctx context.Context) ([]store.TopEntry, string, bool, error) {
	s := r.s
	root := s.root()
	where := r.where(root)
	ok, err := s.checkStore(ctx, false)
	if err != nil || !ok {
		return nil, where, false, err
	}
	r.top, r.parts = map[string]*listed{}, map[string]*listed{}
	partials := internalDir + "/partial/"
	err = s.listObjects(ctx, root, func(o types.Object) error {
		rel := strings.TrimPrefix(aws.ToString(o.Key), root)
		switch p, ok := strings.CutPrefix(rel, partials); {
		case ok:
			take(r.parts, p, o)
		case !strings.HasPrefix(rel, internalDir+"/"):
			take(r.top, rel, o)
		}
		return nil
	})
	if err != nil {
		return nil, where, false, s.wrap(fault.StoreUnreachable, "list", err)
	}
	return topEntries(r.top), where, true, nil
}

// ReadUpload reads the metadata of the finished upload c as the walk showed it (a HEAD of a file
// upload's object, the listing's metadata and .upload.json of a folder upload's), then its
// marker. Made is when the listing showed the upload written, as it was before the engine.
func (r *listRun) ReadUpload(ctx context.Context, c store.Candidate) (*store.UploadMeta, error) {
	s, l := r.s, r.top[c.ID]
	name, tree := l.f.upload()
	var m *store.UploadMeta
	switch {
	case tree:
		tm, err := s.treeMeta(ctx, c.ID)
		if err != nil {
			return nil, err
		}
		info := *tm.Info
		info.Made = l.f.listMade
		tm.Info, m = &info, tm
	case name != "":
		info, err := s.head(ctx, c.ID, name)
		if err != nil {
			return nil, err
		}
		info.Made = l.f.made
		m = &store.UploadMeta{Info: info, NoID: true}
	case l.f.tree: // unfinished: one of ListPartials
		return nil, s.missing(c.ID)
	case l.f.m.exists && len(l.objs) == 1:
		if l.f.m.tombstone { // a sweep's that died before it removed the marker: the next removes it
			return nil, s.missing(c.ID)
		}
		return &store.UploadMeta{OnlyMarker: true}, nil
	default:
		return nil, fault.Errorf(fault.UploadUnreadable, "upload %s: holds no object of an upload", c.ID)
	}
	if l.f.m.exists {
		mk, err := s.readMarker(ctx, c.ID)
		if err != nil {
			return nil, err
		}
		if mk.exists && !mk.tombstone {
			m.LastUsed, m.ForeignMarker = mk.at, mk.foreign
		}
	}
	return m, nil
}

// ListPartials names the unfinished uploads: those with a folder under the partials (their
// info), the files of a folder upload with none, and the multipart uploads with none.
func (r *listRun) ListPartials(ctx context.Context) ([]store.TopEntry, string, error) {
	s := r.s
	where := r.where(s.key(internalDir, "partial"))
	mps, err := s.multiparts(ctx, s.root())
	if err != nil {
		return nil, where, err
	}
	ents := topEntries(r.parts)
	more := map[string]bool{}
	for id, l := range r.top {
		if r.leftover(id, l) {
			more[id] = true
		}
	}
	r.mps = map[string]multipart{}
	for _, mp := range mps {
		if _, seen := r.mps[mp.id]; !seen && !r.hasInfo(mp.id) && !more[mp.id] {
			r.mps[mp.id] = mp
			more[mp.id] = true
		}
	}
	for id := range more {
		if r.parts[id] == nil || len(r.parts[id].objs) == 0 {
			ents = append(ents, store.TopEntry{Name: id, Dir: true})
		}
	}
	sort.SliceStable(ents, func(i, j int) bool { return ents[i].Name < ents[j].Name })
	return ents, where, nil
}

// hasInfo tells whether the walk showed the info of the unfinished upload id.
func (r *listRun) hasInfo(id string) bool {
	l := r.parts[id]
	if l == nil {
		return false
	}
	for _, o := range l.objs {
		if o.name == "info" {
			return true
		}
	}
	return false
}

// leftover tells whether the objects under id are a folder upload's with no info and neither
// finished nor a file upload.
func (r *listRun) leftover(id string, l *listed) bool {
	name, tree := l.f.upload()
	return store.ValidID(id) == nil && l.f.tree && !tree && name == "" && !r.hasInfo(id)
}

// ReadPartial reads the unfinished upload id: its info and what it has written (a folder
// upload's files as the walk showed them), or what the walk showed of one that has no info.
func (r *listRun) ReadPartial(ctx context.Context, id string) (store.UnfinishedState, bool, error) {
	s, l := r.s, r.top[id]
	if r.hasInfo(id) {
		pi, err := s.readInfo(ctx, id)
		if err != nil {
			return store.UnfinishedState{}, fault.CodeOf(err) == fault.UploadMissing, err
		}
		u := store.UnfinishedState{Name: pi.Name, Made: parseTime(pi.Made), Written: parseTime(pi.Made)}
		if pi.Kind == store.KindFolder {
			u.Folder = true
			if l != nil {
				u.Tree = l.treeDir(pi.Name)
				if l.f.last.After(u.Written) {
					u.Written = l.f.last
				}
			}
			return u, false, nil
		}
		u.Bytes, u.Written, err = s.written(ctx, id, pi)
		return u, fault.CodeOf(err) == fault.UploadMissing, err
	}
	if l != nil && r.leftover(id, l) {
		return leftoverState(l), false, nil
	}
	if mp, ok := r.mps[id]; ok {
		return store.UnfinishedState{Name: mp.name, Written: mp.initiated}, false, nil
	}
	return store.UnfinishedState{}, true, nil
}

// leftoverState is the unfinished upload of the files of a folder upload with no info: begun
// when its first object was written, last written when its newest was.
func leftoverState(l *listed) store.UnfinishedState {
	return store.UnfinishedState{Name: l.f.dir, Folder: true, Made: l.f.first, Written: l.f.last, Tree: l.treeDir(l.f.dir)}
}

// treeDir is the folder name of the objects l holds, over what the walk showed: no request.
func (l *listed) treeDir(name string) store.TreeDir {
	if name == "" {
		return nil
	}
	return flatDir(l.objs).sub(name + "/")
}

// flatDir is a folder of an unfinished folder upload (store.TreeDir): the objects under it, in
// key order, named from inside it.
type flatDir []listedObj

// sub is the folder of d at prefix: the objects under it lie side by side in key order.
func (d flatDir) sub(prefix string) flatDir {
	i := sort.Search(len(d), func(i int) bool { return d[i].name >= prefix })
	var out flatDir
	for ; i < len(d) && strings.HasPrefix(d[i].name, prefix); i++ {
		out = append(out, listedObj{name: d[i].name[len(prefix):], size: d[i].size})
	}
	return out
}

func (d flatDir) Entries() []store.SizedEntry {
	var ents []store.SizedEntry
	for _, o := range d {
		name, _, dir := strings.Cut(o.name, "/")
		switch {
		case name == "": // a key with an empty part: no file of the folder
		case !dir:
			ents = append(ents, store.SizedEntry{Name: name, Size: o.size, File: true})
		case len(ents) == 0 || ents[len(ents)-1].Name != name || !ents[len(ents)-1].Dir:
			ents = append(ents, store.SizedEntry{Name: name, Dir: true})
		}
	}
	return ents
}

func (d flatDir) Enter(name string) store.TreeDir { return d.sub(name + "/") }

func (d flatDir) Close() {}

// treeLeftover is the entry of the objects of a folder upload under P/<id>/ that has no info:
// nil when there are none, finished when its listing and metadata are there.
func (s *Store) treeLeftover(ctx context.Context, id string) (*store.Entry, error) {
	var l listed
	prefix := s.key(id) + "/"
	err := s.listObjects(ctx, prefix, func(o types.Object) error {
		take(map[string]*listed{"": &l}, "/"+strings.TrimPrefix(aws.ToString(o.Key), prefix), o)
		return nil
	})
	if err != nil || !l.f.tree {
		return nil, s.wrap(fault.UploadUnreadable, "upload "+id, err)
	}
	e := store.UnfinishedEntry(id, leftoverState(&l))
	e.Finished = l.f.list && l.f.meta
	return &e, nil
}
