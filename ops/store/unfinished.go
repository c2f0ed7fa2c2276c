package store

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// Where a backend keeps an unfinished upload as objects (S3), what it is, what it has written and
// when, is read from the names, sizes and times of the objects the backend lists, one rule
// (ReadUnfinished), as ReadUploadFolder reads a finished one. An upload begun writes, in this
// order, a multipart upload (a stream's, or that of a large file of a folder upload), its info
// (the object "info" of its partial) and its data: the chunks of a step-by-step upload (the
// objects "c/<offset>" of its partial), the parts of a stream's multipart upload, or a folder
// upload's files under its id's folder. Its info says what it is; with no info (a kill before it
// was written, or a sweep killed after it removed it) what is left is still an unfinished upload,
// read from its data (docs/store.md, "S3 stores"), which a sweep removes.

// PartialInfo is what an unfinished upload's info says, as the backend read it.
type PartialInfo struct {
	PartialOf           // its name and kind: a folder upload's, a stream's (its data its parts)
	Size      int64     // declared; -1: open
	Made      time.Time // when it was begun
}

// UnfinishedObjects is what a backend listed of an unfinished upload id.
type UnfinishedObjects struct {
	Info *PartialInfo // its info (nil: none, or gone since its partial was listed)
	// Partial is the objects of its partial, by their names in it; Folder those of its id's
	// folder (its files, for a folder upload), by their paths from it.
	Partial, Folder []FolderObject
	// Parts is the parts of a stream's multipart upload (Info.Streamed), their sizes and times;
	// PartsGone: that multipart upload is not there any more.
	Parts     []FolderObject
	PartsGone bool
	// Multiparts is the multipart uploads under its id, in the order listed: each named by the
	// file it writes (MultipartOf), at when it was begun.
	Multiparts []FolderObject
}

// UnfinishedHolding is what an unfinished upload's objects are (ReadUnfinished).
type UnfinishedHolding int

const (
	UnfinishedGone      UnfinishedHolding = iota // none of them: finished or removed
	UnfinishedInfo                               // an upload with its info
	UnfinishedLeftover                           // a folder upload's files with no info
	UnfinishedChunks                             // a step-by-step upload's chunks with no info
	UnfinishedMultipart                          // a multipart upload with no info
)

// Unfinished is what ReadUnfinished read of an unfinished upload.
type Unfinished struct {
	Holds UnfinishedHolding
	State UnfinishedState // for UnfinishedEntry
	Size  int64           // declared, as its info says (-1: open); 0 when it has none
}

// ReadUnfinished reads the unfinished upload id from the objects o a backend listed of it (see
// above). With its info: named and begun as it says, what its data holds written, last written
// when its newest data was (when it was begun while it has none); a stream whose multipart upload
// is gone (completed since, its info what the finish left; or aborted) is read as one with no
// info, most often none. With no info,
// the first of: a folder upload's files, not finished (ReadUploadFolder: named by its folder); a
// step-by-step upload's chunks (no name: only the info had it); a multipart upload (named by the
// file it writes, last written when it was begun). The chunks of an upload with its info must
// follow each other from offset 0 (ChunkRun): upload.unreadable when they do not.
func ReadUnfinished(id string, o UnfinishedObjects) (Unfinished, error) {
	if pi := o.Info; pi != nil && !(pi.Streamed && o.PartsGone) {
		u := Unfinished{Holds: UnfinishedInfo, Size: pi.Size, State: UnfinishedState{Name: pi.Name, Made: pi.Made}}
		var data []FolderObject
		switch {
		case pi.Folder:
			// What its files hold is what its tree's rules count; of its objects, only when the
			// newest was written.
			u.State.Bytes = FolderTreeBytes(o.Folder, pi.Name)
			data = []FolderObject{{At: ReadUploadFolder(o.Folder).Last}}
		case pi.Streamed:
			data = o.Parts
		default:
			cs, _, err := ChunkRun(id, o.Partial)
			if err != nil {
				return Unfinished{}, err
			}
			for _, c := range cs {
				data = append(data, c.FolderObject)
			}
		}
		u.State.Bytes, u.State.Written = written(u.State.Bytes, pi.Made, data)
		return u, nil
	}
	if f := ReadUploadFolder(o.Folder); f.Holds == HoldsUnfinishedFolder {
		return Unfinished{Holds: UnfinishedLeftover, State: f.Unfinished(o.Folder)}, nil
	}
	if cs := Chunks(o.Partial); len(cs) > 0 {
		var data []FolderObject
		for _, c := range cs {
			data = append(data, c.FolderObject)
		}
		u := Unfinished{Holds: UnfinishedChunks}
		u.State.Bytes, u.State.Written = written(0, time.Time{}, data)
		return u, nil
	}
	if len(o.Multiparts) > 0 {
		mp := o.Multiparts[0]
		return Unfinished{Holds: UnfinishedMultipart, State: UnfinishedState{Name: mp.Name, Written: mp.At}}, nil
	}
	return Unfinished{}, nil
}

// ReadUnfinishedNow is ReadUnfinished of the unfinished upload id from the objects o a backend
// listed of it (o.Info and o.Parts not set), after the reads the listing calls for: its info by
// info, only when the partial holds one (upload.missing: gone since the listing, none), and then
// by parts the parts of the stream's multipart upload it names (none when it names none;
// upload.missing: that multipart upload is gone, PartsGone). Nothing left of it (UnfinishedGone)
// is upload.missing: no unfinished upload id in the store where.
func ReadUnfinishedNow(ctx context.Context, id, where string, o UnfinishedObjects, info func(context.Context) (*PartialInfo, error),
	parts func(context.Context) ([]FolderObject, error)) (Unfinished, error) {
	if slices.ContainsFunc(o.Partial, func(o FolderObject) bool { return o.Name == "info" }) {
		pi, err := info(ctx)
		switch {
		case fault.CodeOf(err) == fault.UploadMissing:
		case err != nil:
			return Unfinished{}, err
		default:
			o.Info = pi
		}
	}
	if o.Info != nil {
		ps, err := parts(ctx)
		if o.PartsGone = fault.CodeOf(err) == fault.UploadMissing; err != nil && !o.PartsGone {
			return Unfinished{}, err
		}
		o.Parts = ps
	}
	u, err := ReadUnfinished(id, o)
	if err == nil && u.Holds == UnfinishedGone {
		err = NotUnfinished(id, where)
	}
	return u, err
}

// UnfinishedTop is where a backend that keeps uploads as objects has unfinished uploads, for
// ListBackend.ListPartials: the folders of its partials (parts, as listed), and the ids with none
// that hold one all the same (ReadUnfinished): an id whose folder holds a folder upload's objects,
// not finished (folders: the objects of each id's folder), and one with a multipart upload
// (multiparts: their ids). Sorted by name.
func UnfinishedTop(parts []TopEntry, folders map[string][]FolderObject, multiparts []string) []TopEntry {
	more := map[string]bool{}
	for id, objs := range folders {
		more[id] = ValidID(id) == nil && ReadUploadFolder(objs).Holds == HoldsUnfinishedFolder
	}
	for _, id := range multiparts {
		more[id] = true
	}
	ents := slices.Clone(parts)
	for _, e := range parts {
		more[e.Name] = more[e.Name] && !e.Dir
	}
	for id, ok := range more {
		if ok {
			ents = append(ents, TopEntry{Name: id, Dir: true})
		}
	}
	sort.SliceStable(ents, func(i, j int) bool { return ents[i].Name < ents[j].Name })
	return ents
}

// written adds what data holds to n, and is when the newest of it was written, since.
func written(n int64, since time.Time, data []FolderObject) (int64, time.Time) {
	for _, d := range data {
		n += d.Size
		if d.At.After(since) {
			since = d.At
		}
	}
	return n, since
}

// Chunk is a chunk of a step-by-step upload: the object "c/<offset>" of its partial.
type Chunk struct {
	FolderObject
	Off int64
}

// Chunks are the chunks among the objects of a partial, as listed.
func Chunks(objs []FolderObject) []Chunk {
	var cs []Chunk
	for _, o := range objs {
		if off, ok := strings.CutPrefix(o.Name, "c/"); ok {
			if n, err := strconv.ParseInt(off, 10, 64); err == nil && n >= 0 {
				cs = append(cs, Chunk{o, n})
			}
		}
	}
	return cs
}

// ChunkRun is the chunks of the unfinished upload id among the objects of its partial, in offset
// order, and where they end: upload.unreadable when one does not start where the one before ends
// (the first at 0), as no writer leaves them.
func ChunkRun(id string, objs []FolderObject) ([]Chunk, int64, error) {
	cs := Chunks(objs)
	sort.Slice(cs, func(i, j int) bool { return cs[i].Off < cs[j].Off })
	var end int64
	for _, c := range cs {
		if c.Off != end {
			return nil, 0, fault.Errorf(fault.UploadUnreadable, "upload %s: chunk at %d, expected one at %d", id, c.Off, end)
		}
		end += c.Size
	}
	return cs, end, nil
}

// MultipartOf is the upload id and the file a multipart upload writes, from its key's path from
// the store's top: "<id>/<name>", a stream's, or "<id>/<folder>/<path>", a large file of a folder
// upload, which writes its folder. ok is false for a key of no upload.
func MultipartOf(rel string) (id, name string, ok bool) {
	id, name, _ = strings.Cut(rel, "/")
	if d, path, ok := strings.Cut(name, "/"); ok && ValidTreeName(d) == nil && CheckRel(path) == nil {
		name = d
	}
	return id, name, ValidID(id) == nil && ValidName(name) == nil
}
