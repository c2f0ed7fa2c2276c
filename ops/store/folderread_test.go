package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// folderObjects is a FolderReader over MapObjects: the file uploads' objects by name (an error:
// what their HEAD answers), a folder upload's listing and metadata, and how many requests of each
// kind were made.
type folderObjects struct {
	MapObjects
	files       map[string]error
	tree        *ListingHead
	meta        []byte // a folder upload's metadata (MetaName; nil: none)
	heads, gets int
}

var errListing = fault.Errorf(fault.UploadMissing, "upload x: %w", ErrNoTreeMeta)

func (f *folderObjects) Get(ctx context.Context, key string) (Object, error) {
	f.gets++
	return f.MapObjects.Get(ctx, key)
}

func (f *folderObjects) HeadFile(_ context.Context, id, name string) (*Info, error) {
	f.heads++
	err, ok := f.files[name]
	if !ok {
		return nil, NotFinished(id, "s3://b")
	}
	if err != nil {
		return nil, err
	}
	return &Info{ID: id, Name: name, Size: 3}, nil
}

func (f *folderObjects) HeadTree(context.Context, string) (*ListingHead, error) {
	f.heads++
	return f.tree, nil
}

func (f *folderObjects) ReadTreeObject(_ context.Context, id, name string) ([]byte, string, error) {
	f.gets++
	if f.meta == nil || name != MetaName {
		return nil, name, NotFinished(id, "s3://b")
	}
	return f.meta, name, nil
}

func (f *folderObjects) FinishedURI(id, name string) string { return "s3://b/" + id + "/" + name }

// TestFolderUpload: what the listing reads of an id's folder, by what it holds: a file upload's
// object, a folder upload's metadata, the marker only when listed (a tombstone beside an upload
// gives no use), and what is no upload named or left to others.
func TestFolderUpload(t *testing.T) {
	ctx := context.Background()
	used := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	const id = "u1"
	file := UploadFolder{Holds: HoldsFile, Name: "a.png"}
	folder := UploadFolder{Holds: HoldsFolder, Name: "d"}
	marked := func(f UploadFolder) UploadFolder { f.Mark = UseMark{Exists: true}; return f }
	for _, tc := range []struct {
		name     string
		f        UploadFolder
		files    map[string]error
		mark     string // the marker's kind written ("": none)
		code     fault.Code
		msg      string
		used     bool // its last use read from the marker
		folder   bool
		tomb     bool
		gets     int
		noHeadOK bool
		noTree   bool // the folder upload's listing carries no head (its metadata not read)
	}{
		{name: "file upload", f: file, files: map[string]error{"a.png": nil}},
		{name: "file upload, marker listed", f: marked(file), files: map[string]error{"a.png": nil}, mark: "used", used: true, gets: 1},
		{name: "file upload, marker not listed", f: file, files: map[string]error{"a.png": nil}, mark: "used"},
		{name: "file upload, tombstone beside", f: marked(file), files: map[string]error{"a.png": nil}, mark: "tombstone", gets: 1},
		{name: "file upload gone", f: file, code: fault.UploadMissing},
		{name: "a listing with no metadata", f: UploadFolder{Holds: HoldsFile, Name: TreeListName}, files: map[string]error{TreeListName: errListing},
			code: fault.UploadUnreadable, msg: "s3://b/u1/" + TreeListName + " is a folder upload's listing"},
		{name: "folder upload", f: marked(folder), mark: "used", used: true, folder: true, gets: 2},
		{name: "folder upload, its listing with no head", f: folder, noTree: true, code: fault.UploadUnreadable, msg: TreeListName + " carries no metadata"},
		{name: "unfinished folder upload", f: UploadFolder{Holds: HoldsUnfinishedFolder, Name: "d"}, code: fault.UploadMissing, noHeadOK: true},
		{name: "tombstone alone", f: UploadFolder{Holds: HoldsTombstone, Mark: UseMark{Exists: true, Tombstone: true}}, tomb: true, noHeadOK: true},
		{name: "nothing", f: UploadFolder{}, code: fault.UploadUnreadable, msg: "holds no object of an upload", noHeadOK: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &folderObjects{files: tc.files, tree: &ListingHead{Info: Info{ID: id, Name: "d"}},
				meta: (&TreeMeta{Info: Info{ID: id, Name: "d"}, Kind: KindFolder}).Encode()}
			if tc.noTree {
				r.tree = nil
			}
			if tc.mark != "" {
				if _, err := WriteUseMark(ctx, &r.MapObjects, id, UseMark{}, tc.mark, used, ErrSweepKept); err != nil {
					t.Fatal(err)
				}
			}
			m, err := FolderUpload(ctx, r, id, "s3://b", tc.f)
			if fault.CodeOf(err) != tc.code || tc.msg != "" && !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("%+v, %v; want %q %q", m, err, tc.code, tc.msg)
			}
			if r.gets != tc.gets || tc.noHeadOK && r.heads != 0 {
				t.Fatalf("%d marker reads (want %d), %d heads", r.gets, tc.gets, r.heads)
			}
			if err != nil {
				return
			}
			if m.Tombstone != tc.tomb || !tc.tomb && (m.Folder != tc.folder || m.LastUsed.Equal(used) != tc.used || m.NoID == tc.folder) {
				t.Fatalf("%+v", m)
			}
		})
	}
}

// TestFolderInfo: a finished upload's Info is its object's, or its listing's for a folder
// upload; no finished upload, or a folder upload whose listing went, is upload.missing.
func TestFolderInfo(t *testing.T) {
	ctx := context.Background()
	head := &ListingHead{Info: Info{ID: "u1", Name: "d", Size: 9}}
	for _, tc := range []struct {
		name string
		f    UploadFolder
		tree *ListingHead
		want string
	}{
		{"file upload", UploadFolder{Holds: HoldsFile, Name: "a.png"}, nil, "a.png"},
		{"folder upload", UploadFolder{Holds: HoldsFolder, Name: "d"}, head, "d"},
		{"empty folder upload", UploadFolder{Holds: HoldsFolder}, head, "d"},
		{"folder upload, its listing gone", UploadFolder{Holds: HoldsFolder, Name: "d"}, nil, ""},
		{"unfinished folder upload", UploadFolder{Holds: HoldsUnfinishedFolder, Name: "d"}, head, ""},
		{"tombstone", UploadFolder{Holds: HoldsTombstone}, head, ""},
		{"nothing", UploadFolder{}, head, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &folderObjects{files: map[string]error{"a.png": nil}, tree: tc.tree}
			info, err := FolderInfo(ctx, r, "u1", "s3://b", tc.f)
			if tc.want == "" {
				if fault.CodeOf(err) != fault.UploadMissing || !strings.Contains(err.Error(), "s3://b") {
					t.Fatalf("%+v, %v, want upload.missing", info, err)
				}
				return
			}
			if err != nil || info.Name != tc.want {
				t.Fatalf("%+v, %v, want %s", info, err, tc.want)
			}
		})
	}
}

// TestSettleFolder: before a use, a file upload named like a listing that is one holds nothing
// (its marker kept), an empty folder upload is named by its listing, and only a marker of an odd
// size is read.
func TestSettleFolder(t *testing.T) {
	ctx := context.Background()
	used := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	mark := UseMark{Exists: true, Version: "v"}
	for _, tc := range []struct {
		name  string
		f     UploadFolder
		files map[string]error
		tree  *ListingHead
		want  UploadFolder
		gets  int
	}{
		{"a listing with no metadata", UploadFolder{Holds: HoldsFile, Name: TreeListName, Mark: mark}, map[string]error{TreeListName: errListing}, nil,
			UploadFolder{Mark: mark}, 0},
		{"a file upload named like a listing", UploadFolder{Holds: HoldsFile, Name: TreeListName}, map[string]error{TreeListName: nil}, nil,
			UploadFolder{Holds: HoldsFile, Name: TreeListName}, 0},
		{"empty folder upload", UploadFolder{Holds: HoldsFolder}, nil, &ListingHead{Info: Info{Name: "d"}},
			UploadFolder{Holds: HoldsFolder, Name: "d"}, 0},
		{"file upload", UploadFolder{Holds: HoldsFile, Name: "a.png", Mark: mark}, nil, nil, UploadFolder{Holds: HoldsFile, Name: "a.png", Mark: mark}, 0},
		{"odd marker", UploadFolder{Holds: HoldsFile, Name: "a.png", Mark: mark, MarkOdd: true}, nil, nil,
			UploadFolder{Holds: HoldsFile, Name: "a.png", Mark: UseMark{Exists: true, At: used}, MarkOdd: true}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &folderObjects{files: tc.files, tree: tc.tree}
			v, err := WriteUseMark(ctx, &r.MapObjects, "u1", UseMark{}, "used", used, ErrSweepKept)
			if err != nil {
				t.Fatal(err)
			}
			if tc.gets == 1 {
				tc.want.Mark.Version = v // as read
			}
			got, err := SettleFolder(ctx, r, "u1", tc.f)
			if err != nil || got != tc.want || r.gets != tc.gets {
				t.Fatalf("%+v, %v (%d marker reads), want %+v", got, err, r.gets, tc.want)
			}
		})
	}
}
