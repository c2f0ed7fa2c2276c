package store

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"path"
	"strings"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/zeebo/blake3"
)

// Folder uploads (docs/folders.md): a folder named as an attachment is one upload, its
// files at STORE/<id>/<name>/<rel>, the whole tree finished at once or not at all. A backend that
// keeps them implements Trees (embedding TreesOn, the rules of treeengine.go over its
// TreeBackend) and declares it in its Features, an optional feature as tusd's are: a caller
// without Features().Trees reports upload.invalid for folder records.

// TreeListName is the listing of a finished folder upload's files beside the folder, at
// STORE/<id>/.tree.b3: one line per file as b3sum writes it (BLAKE3, two spaces, the path from
// the folder), in the byte order of the paths. The folder's BLAKE3 (the record's blake3) is the
// BLAKE3 of this listing, so `b3sum --check` run in the folder checks every file.
const TreeListName = ".tree.b3"

// TreeObjectMax is the most bytes a folder upload's listing or metadata may hold, on every
// backend: a backend's ReadTreeObject reads one byte more at most, the engine takes anything
// longer as damaged, and an upload whose listing would be longer is refused before it is
// published (a listing line is a path and 67 bytes: millions of files).
var TreeObjectMax = 256 << 20 // a variable for the tests

// TreeFile is one file of a folder to upload, or of a finished folder upload.
type TreeFile struct {
	Rel    string // its path from the folder, parts joined by "/"
	Path   string // a source: where it is (absolute, for messages); a finished upload: ""
	Size   int64
	Blake3 string // a finished upload's: from its listing; a source's: "" unless known
}

// TreeSourceFile is one file of a folder being uploaded, opened and checked by the stage: a
// SourceFile the backend closes when done with it.
type TreeSourceFile interface {
	SourceFile
	io.Closer
}

// TreeSource is a folder to upload as one: its files, as the walk found them (sorted by Rel).
// A backend never opens a source file itself: it asks Open, which the stage gives.
type TreeSource struct {
	Path   string // the folder, absolute: with Name, the key a killed upload is resumed by
	Name   string // the plain name the agent is shown (the folder's own name)
	Blake3 string // the folder's BLAKE3 as the manifest says ("": not checked)
	Files  []TreeFile
	// Open opens one of Files as the stage opens a source: never through a symlink, never
	// blocking, a regular file of the size the walk found (upload.sourceChanged otherwise).
	Open func(f TreeFile) (TreeSourceFile, error)
}

// OpenFile is src.Open(f), or upload.invalid when the stage gave no opener.
func (src *TreeSource) OpenFile(f TreeFile) (TreeSourceFile, error) {
	if src.Open == nil {
		return nil, fault.Errorf(fault.UploadInvalid, "folder %s: no way to open its files was given", src.Path)
	}
	return src.Open(f)
}

// TreeInfo is a finished folder upload's metadata.
type TreeInfo struct {
	Info
	Files []TreeFile // every file, sorted by Rel
}

// TreeOptions tune UploadTree.
type TreeOptions struct {
	Progress func(n int64) // told the bytes each step got through
}

// Trees is implemented by a backend that keeps folder uploads.
type Trees interface {
	// UploadTree uploads the folder src as one upload and returns it finished. Each file is read
	// once, never through a symlink, and hashed as it is copied; a folder whose BLAKE3 is not
	// src.Blake3 is upload.hashMismatch, and a file that changes meanwhile upload.sourceChanged.
	// Nothing of it is visible as finished before every file is durable. A killed upload, run
	// again with the same folder and name (on S3: and the same BLAKE3, so that two runs share an
	// upload only when they send the same bytes), resumes: files already stored whole and equal
	// to the source are kept, the rest written. ctx cancelled: the unfinished upload is kept.
	// Source files are read only through src.Open.
	UploadTree(ctx context.Context, src TreeSource, opts TreeOptions) (*TreeInfo, error)

	// TreeInfo reads a finished folder upload's metadata and listing; upload.invalid when id is a
	// finished upload of one file, upload.missing when it is no finished upload.
	TreeInfo(ctx context.Context, id string) (*TreeInfo, error)

	// OpenTreeFile opens the file rel of the finished folder upload id named name through the
	// guarded open: every folder on the way a real folder of the store, the file a regular file
	// of the user's with one link and no group or other bits.
	OpenTreeFile(ctx context.Context, id, name, rel string) (io.ReadCloser, error)

	// VerifyTree reads every file of the finished folder upload id through the guarded open and
	// checks it against the listing (and the listing against the upload's BLAKE3):
	// verify.mismatch naming each file that changed, went missing or was added.
	VerifyTree(ctx context.Context, id string, progress func(int64)) (*TreeInfo, error)

	// FolderFiles reports whether the finished upload id is a folder upload and how many files
	// it holds, from its metadata alone (for ls).
	FolderFiles(ctx context.Context, id string) (files int, folder bool, err error)
}

// KindFolder is the kind a folder upload's metadata records.
const KindFolder = "folder"

// TreeMeta is a finished folder upload's metadata (.upload.json beside the folder, on every
// backend): a file upload's, and what the folder holds.
type TreeMeta struct {
	Info
	Kind  string  `json:"kind"`
	Files int     `json:"files"`
	Sizes []int64 `json:"sizes"` // of each file, in the listing's order
}

// Encode is the metadata file's bytes (MetaName beside the folder): its JSON, one line.
func (m *TreeMeta) Encode() []byte {
	b, _ := json.Marshal(m)
	return append(b, '\n')
}

// TreeDirs is every folder of a tree of files, each once, by its path from the tree's top (".":
// the top itself), each before the folders above it.
func TreeDirs(files []TreeFile) []string {
	var dirs []string
	seen := map[string]bool{}
	for _, f := range files {
		for d := path.Dir(f.Rel); !seen[d]; d = path.Dir(d) {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// CheckRel checks a file's path inside a folder upload: "/"-separated plain names (the names a
// store reserves beside an upload are fine inside the folder).
func CheckRel(rel string) error {
	if rel == "" {
		return fault.Errorf(fault.UploadInvalid, "an empty path inside a folder")
	}
	for _, part := range strings.Split(rel, "/") {
		if err := ValidName(part); err != nil && part != MetaName && part != UsedName {
			return fault.Errorf(fault.UploadInvalid, "%s: not a plain path inside a folder", manifest.Quote(rel))
		}
	}
	return nil
}

// BesideUpload reports whether a finished upload named name (folder: a folder upload) may hold
// entry at its top: its file or folder, its metadata, a folder upload's listing and the use
// marker. Anything else there is no part of the upload: verify names it, or a backend's guard
// refuses the upload.
func BesideUpload(name, entry string, folder bool) bool {
	return entry == name || entry == MetaName || entry == UsedName || folder && entry == TreeListName
}

// FolderAsFile is the refusal of opening the finished folder upload id named name as one file
// (Backend.Open), the same on every backend: its files are opened one by one (OpenTreeFile).
func FolderAsFile(id, name string) error {
	return fault.Errorf(fault.UploadUnreadable, "upload %s: %s is a folder upload; its files are read one by one", id, manifest.Quote(name))
}

// ValidTreeName checks a folder upload's name: plain, and not the listing's.
func ValidTreeName(name string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	if name == TreeListName {
		return fault.Errorf(fault.UploadInvalid, "%s: reserved inside an upload folder; rename the folder", manifest.Quote(name))
	}
	return nil
}

// TreeListing is the listing (TreeListName) of the files sum holds, in its order.
func TreeListing(sum *manifest.TreeSum) []byte {
	var b bytes.Buffer
	for _, f := range sum.Files() {
		b.WriteString(manifest.B3sumLine(f.Blake3, f.Rel))
	}
	return b.Bytes()
}

// CheckTreeSource checks the files of src (plain paths, sorted, each once) and returns their
// total size.
func CheckTreeSource(src *TreeSource) (int64, error) {
	var total int64
	for i, f := range src.Files {
		if err := CheckRel(f.Rel); err != nil {
			return 0, err
		}
		if i > 0 && src.Files[i-1].Rel >= f.Rel {
			return 0, fault.Errorf(fault.UploadInvalid, "%s: the folder's files are not sorted, or listed twice", manifest.Quote(f.Rel))
		}
		total += f.Size
	}
	return total, nil
}

// HashTree is the BLAKE3 of the folder src (manifest.TreeSum), each file read once through
// src.Open.
func HashTree(ctx context.Context, src *TreeSource) (string, error) {
	var sum manifest.TreeSum
	buf := make([]byte, 256<<10)
	h := blake3.New()
	for _, f := range src.Files {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		sf, err := src.OpenFile(f)
		if err != nil {
			return "", err
		}
		h.Reset()
		n, err := io.CopyBuffer(h, io.NewSectionReader(sf, 0, f.Size+1), buf)
		if err == nil && n != f.Size {
			err = fault.Errorf(fault.UploadSourceChange, "%s: changed since the folder was walked", f.Path)
		}
		if err == nil {
			err = sf.Unchanged()
		}
		sf.Close()
		if err != nil {
			return "", fault.AsError(err, fault.FileUnreadable)
		}
		sum.Add(f.Rel, hex.EncodeToString(h.Sum(nil)))
	}
	return sum.Sum(), nil
}
