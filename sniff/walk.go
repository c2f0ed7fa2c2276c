package sniff

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
)

// WalkOptions tune Walk.
type WalkOptions struct {
	// Exclude holds globs (filepath.Match) on the names met inside a folder: a file or folder
	// whose name matches one is skipped, as .git is. CheckExclude tells a glob that cannot work.
	Exclude []string
	// Skipped, when set, is told each entry a folder walk leaves out and why, in walk order, with
	// the path as it is on disk.
	Skipped func(path, why string)
	// SkipLines, when > 0, is how many entries of one folder argument are told to Skipped one by
	// one; the rest are told in one last call, with the folder's path and how many more there were.
	SkipLines int
	// NoIgnore walks what git ignores too (.gitignore, .git/info/exclude); by default it is skipped.
	NoIgnore bool
	// Avoid holds folders a walk never enters, known by identity however they are reached: the
	// store and resolve's work folder, so that attaching a folder that holds one does not put it
	// into its own upload. Each one met is told to Skipped with its Why.
	Avoid []Avoid
	// Each yields a folder argument's files one by one (each with its Rel); by default a folder
	// argument is yielded as one entry, a folder attachment, after those of its files whose
	// names no manifest can hold (file.badName).
	Each bool
}

// Avoid is a folder a walk never enters, and why, as Skipped is told.
type Avoid struct{ Path, Why string }

// Entry is what WalkEntries yields.
type Entry struct {
	Path string // as on disk (shown with U+FFFD for bytes that are not UTF-8, then Err is file.badName)
	// Rel is the path of a file found in a folder argument, from that folder, parts joined by "/".
	Rel string
	// Folder: the entry is a folder argument, to be taken as one attachment (FillFolder).
	Folder bool
	// Regular: a folder's walk listed the entry as a regular file (see Listed).
	Regular bool
	Err     error
}

// skipNames are the names a folder walk always leaves out: version-control metadata and Finder's.
var skipNames = map[string]string{
	".git":      "version-control metadata",
	".hg":       "version-control metadata",
	".svn":      "version-control metadata",
	".DS_Store": "Finder metadata",
}

// CheckExclude returns an error naming the first glob that is malformed or holds a slash (a glob
// matches one name, never a path).
func CheckExclude(globs []string) error {
	for _, g := range globs {
		if strings.ContainsRune(g, '/') {
			return fmt.Errorf("%s: a glob matches a name, not a path with /", manifest.Quote(g))
		}
		if _, err := filepath.Match(g, ""); err != nil {
			return fmt.Errorf("%s: %v", manifest.Quote(g), err)
		}
	}
	return nil
}

// Walk yields the files that `attachctl sniff PATH...` works on, in order: for each argument,
//
//   - a folder (also through a symlink given as the argument itself) is recursed in lexical order,
//     yielding its regular files with a nil error. What is not a regular file (a symlink, which is
//     not followed, a FIFO, socket or device, which is never opened), .git, .hg, .svn, .DS_Store
//     and the names opts.Exclude matches are left out and told to opts.Skipped. A folder that
//     cannot be read is yielded with file.unreadable. An empty folder yields nothing.
//   - anything else is yielded as is, with a nil error; Fill reports what is wrong with it (a
//     FIFO is file.notRegular there, never opened). An argument that cannot even be stat'ed
//     (missing, permission, a symlink loop: ELOOP) is yielded with that error (file.missing or
//     file.unreadable), promptly.
//
// A path that is not valid UTF-8, in any of its parts, cannot be named in a manifest: it is
// yielded with file.badName, shown with each invalid byte as U+FFFD, and never read.
//
// A non-nil error from fn stops the walk and Walk returns it.
func Walk(paths []string, opts WalkOptions, fn func(path string, err error) error) error {
	opts.Each = true
	return WalkEntries(paths, opts, func(e Entry) error { return fn(e.Path, e.Err) })
}

// WalkEntries is Walk with the folder arguments taken as opts.Each says, and each file's Rel.
func WalkEntries(paths []string, opts WalkOptions, fn func(Entry) error) error {
	yield := func(e Entry) error {
		if !utf8.ValidString(e.Path) {
			e.Path, e.Err = badName(e.Path)
			e.Rel, e.Folder, e.Regular = "", false, false
		}
		return fn(e)
	}
	for _, arg := range paths {
		fi, err := os.Stat(arg)
		if err != nil {
			if err := yield(Entry{Path: arg, Err: pathError(arg, err)}); err != nil {
				return err
			}
			continue
		}
		if !fi.IsDir() {
			if err := yield(Entry{Path: arg}); err != nil {
				return err
			}
			continue
		}
		if !opts.Each {
			// The folder is one attachment; its walk here only reports what it leaves out and
			// yields the files no manifest can name, which FillFolder leaves out silently.
			err := walkDir(arg, opts, func(e Entry) error {
				if !utf8.ValidString(e.Path) {
					return yield(e)
				}
				return nil
			})
			if err != nil {
				return err
			}
			if err := yield(Entry{Path: arg, Folder: true}); err != nil {
				return err
			}
			continue
		}
		if err := walkDir(arg, opts, yield); err != nil {
			return err
		}
	}
	return nil
}

// badName is the path shown with each byte that is not UTF-8 as U+FFFD, and its file.badName error.
func badName(p string) (string, error) {
	var b strings.Builder
	for _, r := range p { // ranging over a string yields U+FFFD for each byte that is not UTF-8
		b.WriteRune(r)
	}
	what := "the file"
	if utf8.ValidString(filepath.Base(p)) {
		what = "its folder"
	}
	return b.String(), fault.Errorf(fault.FileBadName,
		"%s: not valid UTF-8, so no manifest can name it; rename %s (%s)", manifest.Quote(p), what, manifest.PlainRule)
}

// stop carries fn's error through filepath.WalkDir, so that fn may return even fs.SkipDir.
type stop struct{ err error }

func (s *stop) Error() string { return s.err.Error() }

func walkDir(root string, opts WalkOptions, fn func(Entry) error) error {
	// filepath.WalkDir does not follow a root that is a symlink; with a trailing slash, the root's
	// Lstat resolves the link. Paths below still read root/name (Join cleans the slash).
	start := root
	if fi, err := os.Lstat(root); err == nil && fi.Mode()&fs.ModeSymlink != 0 && !strings.HasSuffix(root, "/") {
		start = root + "/"
	}
	told := 0
	skip := func(p, why string) {
		if told++; opts.Skipped != nil && (opts.SkipLines <= 0 || told <= opts.SkipLines) {
			opts.Skipped(p, why)
		}
	}
	var ign *ignoreRules
	if !opts.NoIgnore {
		ign = newIgnoreRules(start)
	}
	// A folder to avoid that does not exist yet (a store the upload makes while this walk goes
	// on) is looked for again at each folder met.
	avoid := make([]fs.FileInfo, len(opts.Avoid))
	avoided := func(p string, d fs.DirEntry) string {
		if len(avoid) == 0 || !d.IsDir() {
			return ""
		}
		var fi fs.FileInfo
		for i, a := range opts.Avoid {
			if avoid[i] == nil {
				if ai, err := os.Stat(a.Path); err == nil && ai.IsDir() {
					avoid[i] = ai
				}
			}
			if avoid[i] == nil {
				continue
			}
			if fi == nil {
				var err error
				if fi, err = os.Stat(p); err != nil { // the root may be reached through a link; below, p is no link
					return ""
				}
			}
			if os.SameFile(avoid[i], fi) {
				return a.Why
			}
		}
		return ""
	}
	// rels maps a folder's path as walked to its path from the root, so that an entry's Rel is
	// its folder's plus its name, never a re-derivation from a path that may not be UTF-8.
	rels := map[string]string{filepath.Clean(start): ""}
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		var rel, parentRel string
		if p != start {
			parentRel = parentRelOf(rels, p, d.Name())
			rel = d.Name()
			if parentRel != "" {
				rel = joinRel(p, parentRel, rel)
			}
		}
		if err == nil {
			if why := avoided(p, d); why != "" {
				skip(p, why)
				return fs.SkipDir
			}
		}
		if err == nil && p != start {
			why := skipped(d, opts.Exclude)
			if why == "" && ign != nil && ign.ignored(rel, parentRel, d.IsDir()) {
				why = "ignored by git (.gitignore, .git/info/exclude; --no-ignore walks it)"
			}
			if why != "" {
				skip(p, why)
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
		}
		var ferr error
		switch {
		case err != nil: // a folder that cannot be read (fn was called for it before, with nil)
			if ferr = fn(Entry{Path: p, Err: pathError(p, err)}); ferr == nil {
				if d != nil && d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
		case d.IsDir():
			rels[filepath.Clean(p)] = rel
			if ign != nil && p != start {
				ign.enter(p, rel, parentRel)
			}
			return nil
		default:
			ferr = fn(Entry{Path: p, Rel: rel, Regular: d.Type().IsRegular()})
		}
		if ferr != nil {
			return &stop{ferr}
		}
		return nil
	})
	if opts.Skipped != nil && opts.SkipLines > 0 && told > opts.SkipLines {
		opts.Skipped(root, fmt.Sprintf("and %d more entries inside it skipped, not listed one by one", told-opts.SkipLines))
	}
	var s *stop
	if errors.As(err, &s) {
		return s.err
	}
	return err
}

// parentRelOf is the Rel of the folder that holds p, whose last part is name. Below the root the
// walk joins a clean folder path and a name with the separator, so the folder is p without its
// tail: a map lookup, not the two passes of filepath.Clean (one in filepath.Dir) over every path
// walked. Only where the root was not clean (".", "a//b", a trailing slash) does the lookup miss
// and the path get cleaned.
func parentRelOf(rels map[string]string, p, name string) string {
	if cut := len(p) - len(name) - 1; cut > 0 && p[cut] == filepath.Separator && p[cut+1:] == name {
		if rel, ok := rels[p[:cut]]; ok {
			return rel
		}
	}
	return rels[filepath.Dir(filepath.Clean(p))]
}

// joinRel is parentRel + "/" + name: the tail of the walked path p when p ends with exactly those
// bytes (it does where the walk joins names with "/"), so that a file's rel costs no copy; else the
// two joined.
func joinRel(p, parentRel, name string) string {
	if n := len(parentRel) + 1 + len(name); len(p) >= n {
		if tail := p[len(p)-n:]; tail[:len(parentRel)] == parentRel && tail[len(parentRel)] == '/' && tail[len(parentRel)+1:] == name {
			return tail
		}
	}
	return parentRel + "/" + name
}

// skipped says why a folder walk leaves d out, or "" when it is a regular file or a folder to
// recurse into.
func skipped(d fs.DirEntry, exclude []string) string {
	name := d.Name()
	if why, ok := skipNames[name]; ok {
		return why
	}
	for _, g := range exclude {
		if ok, _ := filepath.Match(g, name); ok {
			return "excluded by " + manifest.Quote(g)
		}
	}
	switch t := d.Type(); {
	case t.IsDir(), t.IsRegular():
		return ""
	case t&fs.ModeSymlink != 0:
		return "a symlink inside a folder; not followed"
	default:
		return typeName(t) + "; not read"
	}
}

func typeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}

// ReadPaths calls fn with each path of a list read from r, in order: one a line, or with nul each
// ended by a NUL (as `find -print0` writes them). Empty entries are skipped, and the last may lack
// its ending. Nothing else is trimmed: a path is the bytes between two endings, and one that is
// not UTF-8 is Walk's to report. A non-nil error from fn stops the reading and is returned.
func ReadPaths(r io.Reader, nul bool, fn func(path string) error) error {
	sep := byte('\n')
	if nul {
		sep = 0
	}
	br := bufio.NewReader(r)
	for {
		p, err := br.ReadString(sep)
		if p = strings.TrimSuffix(p, string(sep)); p != "" {
			if ferr := fn(p); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fault.Errorf(fault.FileUnreadable, "reading the path list: %w", err)
		}
	}
}
