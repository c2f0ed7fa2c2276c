package sniff

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// ignoreRules is what git ignores under one folder walk: the patterns of the .gitignore files met
// on the way (and of the enclosing repository's, above the walk's root), and of
// .git/info/exclude, matched by go-git's gitignore matcher with git's rules (the last match wins,
// a folder's patterns only apply below it, `!` re-includes, `dir/` matches folders only).
// The user's global excludes (core.excludesFile) are not read: what a walk skips depends only on
// what is in the tree and its repository.
type ignoreRules struct {
	// base is the walk root's path from the repository's top (nil when the root is not inside a
	// repository, or when the root itself is ignored there: a folder named on purpose is taken
	// with only its own rules).
	base []string
	// byDir holds the patterns in force in each folder met so far, by its "/"-joined path from
	// the walk root ("" for the root): those of every folder above it, then its own.
	byDir map[string][]gitignore.Pattern
}

// newIgnoreRules reads the rules that hold at root: those of the repository root holds it (its
// info/exclude and the .gitignore files from its top down to root's parent), then root's own.
func newIgnoreRules(root string) *ignoreRules {
	r := &ignoreRules{byDir: map[string][]gitignore.Pattern{}}
	var above []gitignore.Pattern
	if abs, err := filepath.Abs(root); err == nil {
		if top, rel, ok := repoTop(abs); ok {
			var parts []string
			if rel != "." {
				parts = strings.Split(filepath.ToSlash(rel), "/")
			}
			above = readIgnoreFile(filepath.Join(top, ".git", "info", "exclude"), nil)
			dir := top
			for i := range parts {
				above = append(above, readIgnoreFile(filepath.Join(dir, ".gitignore"), parts[:i])...)
				dir = filepath.Join(dir, parts[i])
			}
			if len(parts) > 0 && gitignore.NewMatcher(above).Match(parts, true) {
				above = nil // the folder was named although git ignores it: take what is in it
			} else {
				r.base = parts
			}
		}
	}
	r.byDir[""] = append(above, r.ownPatterns(root, "")...)
	return r
}

// repoTop finds the git work tree that holds the folder abs: its top folder and abs's path from
// there. A folder is a work tree's top when it holds .git (a folder, or a file as in a worktree).
func repoTop(abs string) (top, rel string, ok bool) {
	for dir := abs; ; {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			rel, err := filepath.Rel(dir, abs)
			return dir, rel, err == nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", "", false
		}
		dir = parent
	}
}

// ownPatterns reads the ignore files of the folder dir (at rel from the walk root): a nested
// repository's .git/info/exclude, then its .gitignore.
func (r *ignoreRules) ownPatterns(dir, rel string) []gitignore.Pattern {
	domain := r.domain(rel)
	var ps []gitignore.Pattern
	if rel != "" { // the root's own info/exclude was read as the repository's
		ps = readIgnoreFile(filepath.Join(dir, ".git", "info", "exclude"), domain)
	}
	return append(ps, readIgnoreFile(filepath.Join(dir, ".gitignore"), domain)...)
}

// domain is the path parts of rel (from the walk root) from the repository's top.
func (r *ignoreRules) domain(rel string) []string {
	parts := append([]string(nil), r.base...)
	if rel != "" {
		parts = append(parts, strings.Split(rel, "/")...)
	}
	return parts
}

// enter reads the rules of the folder dir, at rel from the walk root, whose parent is at
// parentRel; the walk calls it before it lists dir.
func (r *ignoreRules) enter(dir, rel, parentRel string) {
	own := r.ownPatterns(dir, rel)
	parent := r.byDir[parentRel]
	if len(own) == 0 {
		r.byDir[rel] = parent
		return
	}
	r.byDir[rel] = append(parent[:len(parent):len(parent)], own...)
}

// ignored reports whether git ignores the entry at rel (from the walk root), in the folder at
// parentRel.
func (r *ignoreRules) ignored(rel, parentRel string, isDir bool) bool {
	ps := r.byDir[parentRel]
	if len(ps) == 0 {
		return false
	}
	return gitignore.NewMatcher(ps).Match(r.domain(rel), isDir)
}

// maxIgnoreFile bounds what is read of one ignore file: rules, not data.
const maxIgnoreFile = 1 << 20

// readIgnoreFile parses the git ignore file at path, with the patterns' domain (the folder they
// apply below, from the repository's top). A missing or unreadable file, or one that is not a
// regular file (a symlink is not followed, as git does not), holds no patterns.
func readIgnoreFile(path string, domain []string) []gitignore.Pattern {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi2, err := f.Stat(); err != nil || !os.SameFile(fi, fi2) { // replaced since the Lstat
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(f, maxIgnoreFile))
	if err != nil {
		return nil
	}
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps
}
