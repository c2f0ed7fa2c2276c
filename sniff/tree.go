package sniff

import (
	"encoding/hex"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/attachctl/attachctl/manifest/fault"
	unix "github.com/attachctl/attachctl/sniff/internal/fsys"
	"github.com/zeebo/blake3"

	"github.com/attachctl/attachctl/manifest"
)

// TreeFile is one file of a folder attachment.
type TreeFile struct {
	Rel  string // its path from the folder, parts joined by "/"
	Path string // its path on disk: the folder's path joined with Rel
	Size int64  // as the walk found it
}

// Tree lists the files of the folder root that a folder attachment holds, sorted by Rel (byte
// order, the order of its BLAKE3's listing): the files WalkEntries would yield for it with
// opts.Each, less those whose names are not UTF-8 (WalkEntries reports those). What the walk skips
// is told to opts.Skipped. A folder inside that cannot be read, or a file that went away, is an
// error naming it: a folder is attached whole or not at all.
func Tree(root string, opts WalkOptions) ([]TreeFile, error) {
	var files []TreeFile
	opts.Each = true
	err := walkDir(root, opts, func(e Entry) error {
		if e.Err != nil {
			return e.Err
		}
		if !utf8.ValidString(e.Path) {
			return nil
		}
		var st unix.Stat_t
		if err := retry(func() error { return unix.Lstat(e.Path, &st) }); err != nil {
			return pathError(e.Path, err)
		}
		if uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG { // replaced since the folder was listed
			return checkRegular(e.Path, uint32(st.Mode))
		}
		files = append(files, TreeFile{Rel: e.Rel, Path: e.Path, Size: st.Size})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(files, func(a, b TreeFile) int { return strings.Compare(a.Rel, b.Rel) })
	return files, nil
}

// FillFolder sniffs the folder at rec.Path as one attachment: kind folder, mime inode/directory,
// name the folder's own name, size the bytes of its files, files their count, and (unless
// opts.NoHash) blake3 the folder's BLAKE3 (manifest.TreeSum) over each file's BLAKE3, every file
// read once. Which files it holds is Tree's answer with walk. A file inside that changes while
// it is read is file.changed.
func FillFolder(rec *manifest.Record, opts Options, walk WalkOptions) error {
	name := filepath.Base(rec.Path)
	if abs, err := filepath.Abs(rec.Path); err == nil {
		name = filepath.Base(abs) // "." and ".." are named as the folder they are
	}
	files, err := Tree(rec.Path, walk)
	if err != nil {
		return err
	}
	var total int64
	var sum manifest.TreeSum
	for _, f := range files {
		if opts.NoHash {
			total += f.Size
			continue
		}
		h, n, err := HashFile(f.Path, f.Size)
		if err != nil {
			return err
		}
		total += n
		sum.Add(f.Rel, h)
	}
	rec.Name, rec.Kind, rec.Mime = name, manifest.KindFolder, manifest.MimeFolder
	rec.SetSize(total)
	rec.Files = len(files)
	rec.Sniffed = files
	rec.Width, rec.Height, rec.Orientation = 0, 0, 0
	rec.Blake3 = ""
	if !opts.NoHash {
		rec.Blake3 = sum.Sum()
	}
	return nil
}

// HashFile reads the regular file at path, never through a symlink and never blocking on a
// FIFO, and returns its BLAKE3 and size; a size other than want (-1: any) or a change while it
// is read is file.changed.
func HashFile(path string, want int64) (string, int64, error) {
	var fd int
	err := retry(func() (err error) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
		return err
	})
	if err != nil {
		return "", 0, pathError(path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", 0, pathError(path, err)
	}
	if err := checkRegular(path, uint32(st.Mode)); err != nil {
		return "", 0, err
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	h := hashPool.Get().(*blake3.Hasher)
	defer hashPool.Put(h)
	h.Reset()
	var total int64
	for {
		n, err := readFull(fd, *bp, len(*bp))
		if err != nil {
			return "", 0, pathError(path, err)
		}
		h.Write((*bp)[:n])
		total += int64(n)
		if n < len(*bp) {
			break
		}
	}
	size, mtime := st.Size, st.Mtim
	if err := unix.Fstat(fd, &st); err != nil {
		return "", 0, pathError(path, err)
	}
	if total != size || st.Size != size || st.Mtim != mtime || want >= 0 && size != want {
		return "", 0, fault.Errorf(fault.FileChanged, "%s: changed while being read (size %d, then %d, %d bytes read)",
			manifest.Quote(path), size, st.Size, total)
	}
	var sum [32]byte
	return hex.EncodeToString(h.Sum(sum[:0])), total, nil
}
