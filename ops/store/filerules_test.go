package store

import (
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
)

// fileFolder is a finished upload's folder as a backend that keeps uploads as files reads it:
// the folder, the file a.txt, its metadata and marker, each as the store makes it, with edit
// applied to the entries (by name, "" the folder; a nil stat removes it, a new name adds it).
func fileFolder(name string, tree bool, edit map[string]*FileStat) *FileFolder {
	own := func(n string, typ fs.FileMode, perm uint32) FileStat {
		return FileStat{Name: n, Type: typ, Perm: perm, Uid: 1000, Own: true, Links: 1}
	}
	es := []FileStat{own("", fs.ModeDir, 0o700), own(MetaName, 0, 0o400), own(UsedName, 0, 0o600)}
	if tree {
		es = append(es, own(TreeListName, 0, 0o400), own(name, fs.ModeDir, 0o700))
	} else {
		es = append(es, own(name, 0, 0o400))
	}
	var out []FileStat
	for _, e := range es {
		st, ok := edit[e.Name]
		switch {
		case !ok:
			out = append(out, e)
		case st != nil:
			st.Name = e.Name
			out = append(out, *st)
		}
		delete(edit, e.Name)
	}
	for n, st := range edit {
		st.Name = n
		out = append(out, *st)
	}
	return &FileFolder{ID: "u1", Dir: "/s/u1", Name: name, Tree: tree, Entries: out}
}

// TestFileFolderCheck: what the store demands of an upload's folder kept as files, and the words
// and code of each refusal: the folder the user's and 0700, nothing in it but the upload, its
// metadata, its marker (one being written too) and a folder upload's listing, each file the
// user's with one link and no access for others, of the mode the store gives it (an older store's
// 0600 on a finished file taken), a folder upload's folder a real folder of mode 0700.
func TestFileFolderCheck(t *testing.T) {
	file := func(uid uint32, perm uint32, links uint64) *FileStat {
		return &FileStat{Perm: perm, Uid: uid, Own: uid == 1000, Links: links}
	}
	dir := func(uid uint32, perm uint32) *FileStat {
		return &FileStat{Type: fs.ModeDir, Perm: perm, Uid: uid, Own: uid == 1000, Links: 2}
	}
	for _, tc := range []struct {
		what string
		tree bool
		edit map[string]*FileStat
		want string // "": taken
	}{
		{"as the store makes it", false, nil, ""},
		{"a folder upload as the store makes it", true, nil, ""},
		{"an older store's 0600 on the file", false, map[string]*FileStat{"a.txt": file(1000, 0o600, 1)}, ""},
		{"no marker", false, map[string]*FileStat{UsedName: nil}, ""},
		{"a marker being written", false, map[string]*FileStat{UsedName + ".new-42": file(1000, 0o600, 1)}, ""},
		{"the folder another user's", false, map[string]*FileStat{"": dir(7, 0o700)}, "/s/u1: owned by uid 7, not by the current user"},
		{"the folder open to others", false, map[string]*FileStat{"": dir(1000, 0o755)}, "/s/u1: folder mode 0755, not 0700"},
		{"an entry no part of the upload", false, map[string]*FileStat{"b.txt": file(1000, 0o400, 1)}, `/s/u1: unexpected entry "b.txt"`},
		{"a listing beside a file upload", false, map[string]*FileStat{TreeListName: file(1000, 0o400, 1)}, `/s/u1: unexpected entry ".tree.b3"`},
		{"the file a link", false, map[string]*FileStat{"a.txt": {Type: fs.ModeSymlink, Perm: 0o777, Own: true, Links: 1}}, "/s/u1/a.txt: a symlink"},
		{"the file a FIFO", false, map[string]*FileStat{"a.txt": {Type: fs.ModeIrregular, Perm: 0o400, Own: true, Links: 1}}, "/s/u1/a.txt: not a regular file"},
		{"the file another user's", false, map[string]*FileStat{"a.txt": file(7, 0o400, 1)}, "/s/u1/a.txt: owned by uid 7, not by the current user"},
		{"the file readable by others", false, map[string]*FileStat{"a.txt": file(1000, 0o644, 1)}, "/s/u1/a.txt: mode 0644 gives group or others access"},
		{"the file of two links", false, map[string]*FileStat{"a.txt": file(1000, 0o400, 2)}, "/s/u1/a.txt: 2 hard links, not 1"},
		{"the file write-only", false, map[string]*FileStat{"a.txt": file(1000, 0o200, 1)}, "/s/u1/a.txt: mode 0200, not 0400 (or an older store's 0600)"},
		{"the metadata writable", false, map[string]*FileStat{MetaName: file(1000, 0o700, 1)}, "/s/u1/.upload.json: mode 0700, not 0400 (or an older store's 0600)"},
		{"the marker read-only", false, map[string]*FileStat{UsedName: file(1000, 0o400, 1)}, "/s/u1/.used: mode 0400, not 0600"},
		{"a marker being written read-only", false, map[string]*FileStat{UsedName + ".new-42": file(1000, 0o400, 1)}, "/s/u1/.used.new-42: mode 0400, not 0600"},
		{"the file a folder", false, map[string]*FileStat{"a.txt": dir(1000, 0o700)}, "/s/u1/a.txt: not a regular file"},
		{"a folder upload's folder a file", true, map[string]*FileStat{"a.txt": file(1000, 0o400, 1)}, "/s/u1/a.txt: not a real folder"},
		{"a folder upload's folder open to others", true, map[string]*FileStat{"a.txt": dir(1000, 0o755)}, "/s/u1/a.txt: folder mode 0755, not 0700"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			err := fileFolder("a.txt", tc.tree, tc.edit).Check()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Check: %v, want it taken", err)
			case tc.want == "":
			case fault.CodeOf(err) != fault.UploadUnreadable || fault.AsError(err, "").Message != "upload u1: "+tc.want:
				t.Fatalf("Check: %v (%s), want upload.unreadable %q", err, fault.CodeOf(err), "upload u1: "+tc.want)
			}
		})
	}
}

// TestFileFolderWrongMode: the repair verify suggests is the first of the folder and its regular
// files whose mode is not the store's, with the store's; what is not a regular file, and an
// older store's 0600 on a finished file, are no mode to repair.
func TestFileFolderWrongMode(t *testing.T) {
	for _, tc := range []struct {
		what string
		edit map[string]*FileStat
		path string // "": nothing to repair
		mode fs.FileMode
	}{
		{"every mode right", nil, "", 0},
		{"an older store's 0600", map[string]*FileStat{"a.txt": {Perm: 0o600, Own: true, Links: 1}}, "", 0},
		{"a link of mode 0777", map[string]*FileStat{"a.txt": {Type: fs.ModeSymlink, Perm: 0o777, Own: true, Links: 1}}, "", 0},
		{"the folder open", map[string]*FileStat{"": {Type: fs.ModeDir, Perm: 0o755, Own: true}}, "/s/u1", DirMode},
		{"the file open", map[string]*FileStat{"a.txt": {Perm: 0o644, Own: true, Links: 1}}, "/s/u1/a.txt", ReadOnlyMode},
		{"the marker read-only", map[string]*FileStat{UsedName: {Perm: 0o400, Own: true, Links: 1}}, "/s/u1/.used", FileMode},
		{"the folder and the file: the folder first", map[string]*FileStat{"": {Type: fs.ModeDir, Perm: 0o755, Own: true},
			"a.txt": {Perm: 0o644, Own: true, Links: 1}}, "/s/u1", DirMode},
	} {
		t.Run(tc.what, func(t *testing.T) {
			r, ok := fileFolder("a.txt", false, tc.edit).WrongMode()
			if ok != (tc.path != "") || r.Path != tc.path || r.Mode != tc.mode {
				t.Fatalf("WrongMode: %+v, %v; want %q %04o", r, ok, tc.path, tc.mode)
			}
		})
	}
}

// TestFileStatTreeEntry: what ReadTreeDir reports of an entry of a folder upload kept as files:
// a file with its size, a folder (named by verify when it is not the user's of mode 0700), and
// anything else as neither.
func TestFileStatTreeEntry(t *testing.T) {
	for _, tc := range []struct {
		st   FileStat
		want TreeEntry
	}{
		{FileStat{Name: "f", Perm: 0o400, Own: true, Links: 1, Size: 5}, TreeEntry{Name: "f", File: true, Size: 5}},
		{FileStat{Name: "d", Type: fs.ModeDir, Perm: 0o700, Own: true}, TreeEntry{Name: "d", Dir: true}},
		{FileStat{Name: "d", Type: fs.ModeDir, Perm: 0o755, Uid: 1000, Own: true}, TreeEntry{Name: "d", Dir: true,
			Why: "folder mode 0755, not 0700"}},
		{FileStat{Name: "d", Type: fs.ModeDir, Perm: 0o700, Uid: 7}, TreeEntry{Name: "d", Dir: true,
			Why: "owned by uid 7, not by the current user"}},
		{FileStat{Name: "l", Type: fs.ModeSymlink, Perm: 0o777, Own: true, Size: 3}, TreeEntry{Name: "l"}},
	} {
		if got := tc.st.TreeEntry(); got != tc.want {
			t.Errorf("%+v: %+v, want %+v", tc.st, got, tc.want)
		}
	}
}

// TestUploadPathsOf: a path verify --check names is read as a finished upload's file only where
// an upload id is followed by an upload's name: a file upload's (STORE/<id>/<name>) or a file of a
// folder upload (STORE/<id>/<name>/<rel>), the nearest the file first.
func TestUploadPathsOf(t *testing.T) {
	id, err := NewID()
	if err != nil {
		t.Fatal(err)
	}
	id2, err := NewID()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		abs  string
		want []UploadPath
	}{
		{"/home/u/store/" + id + "/a.txt", []UploadPath{{"/home/u/store", id, "a.txt"}}},
		{"/home/u/store/" + id + "//a.txt", []UploadPath{{"/home/u/store", id, "a.txt"}}},
		{"/home/u/store/" + id + "/proj/src/a.go", []UploadPath{{"/home/u/store", id, "proj/src/a.go"}}},
		{"/s/" + id + "/proj/" + id2 + "/x", []UploadPath{{"/s/" + id + "/proj", id2, "x"}, {"/s", id, "proj/" + id2 + "/x"}}},
		{"/" + id + "/a.txt", []UploadPath{{"/", id, "a.txt"}}},
		{"/home/u/store/" + id + "/" + MetaName, nil},
		{"/home/u/store/" + id + "/" + MetaName + "/x", nil},
		{"/home/u/store/not-an-id/a.txt", nil},
		{"/home/u/store/" + strings.ToUpper(id) + "/a.txt", nil},
		{"/home/u/store/" + id + "/", nil},
		{"/home/u/store/" + id, nil},
	} {
		if got := UploadPathsOf(tc.abs); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.abs, got, tc.want)
		}
	}
}
