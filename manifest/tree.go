package manifest

import (
	"encoding/hex"
	"slices"
	"strings"

	"github.com/zeebo/blake3"
)

// TreeSum is the BLAKE3 of a folder (a folder record's blake3): the BLAKE3-256 of the b3sum
// listing of its files, one line per file in the byte order of their relative paths, each line
// as `b3sum` writes it (B3sumLine) with the path relative to the folder, parts joined by "/". So
//
//	cd FOLDER && find . -type f | sed 's|^\./||' | LC_ALL=C sort | xargs -d '\n' b3sum | b3sum
//
// gives the same sum for a folder with nothing to skip. An empty folder's is the BLAKE3 of nothing.
// The zero value is ready; Add files in any order.
type TreeSum struct {
	files  []TreeSumFile
	sorted bool
}

// TreeSumFile is one file of a TreeSum.
type TreeSumFile struct{ Rel, Blake3 string }

// Add takes one file: its path relative to the folder ("/"-separated) and its BLAKE3 in hex.
func (t *TreeSum) Add(rel, blake3 string) {
	t.files = append(t.files, TreeSumFile{rel, blake3})
	t.sorted = false
}

// Files are the files added, in the listing's order.
func (t *TreeSum) Files() []TreeSumFile {
	t.sort()
	return t.files
}

func (t *TreeSum) sort() {
	if !t.sorted {
		slices.SortFunc(t.files, func(a, b TreeSumFile) int { return strings.Compare(a.Rel, b.Rel) })
		t.sorted = true
	}
}

// Len is how many files were added.
func (t *TreeSum) Len() int { return len(t.files) }

// Sum is the tree's BLAKE3 in hex.
func (t *TreeSum) Sum() string {
	t.sort()
	h := blake3.New()
	var line []byte
	for _, f := range t.files {
		line = append(line[:0], B3sumLine(f.Blake3, f.Rel)...)
		h.Write(line)
	}
	var sum [32]byte
	return hex.EncodeToString(h.Sum(sum[:0]))
}

// B3sumLine is one line as b3sum writes it: a path holding a backslash or a newline is escaped
// (\\ and \n) and the line then starts with a backslash.
func B3sumLine(hash, path string) string {
	if strings.ContainsAny(path, "\\\n") {
		return "\\" + hash + "  " + B3sumEscape(path) + "\n"
	}
	return hash + "  " + path + "\n"
}

// B3sumEscape escapes a path as b3sum does: a backslash becomes two, a newline backslash-n.
func B3sumEscape(path string) string {
	return strings.NewReplacer("\\", "\\\\", "\n", "\\n").Replace(path)
}
