package sniff

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/attachctl/attachctl/manifest"
)

// Walk yields the files that `attachctl sniff PATH...` works on, in order: for each argument,
//
//   - a folder (also through a symlink given as the argument itself) is recursed in lexical order,
//     yielding its regular files with a nil error. A symlink met inside a folder is not followed: it
//     is yielded with a file.notRegular error, and so are FIFOs, sockets and devices (which are
//     never opened). A folder that cannot be read is yielded with file.unreadable. An empty folder
//     yields nothing.
//   - anything else is yielded as is, with a nil error; Fill reports what is wrong with it. An
//     argument that cannot even be stat'ed (missing, permission, a symlink loop: ELOOP) is yielded
//     with that error (file.missing or file.unreadable), promptly.
//
// A non-nil error from fn stops the walk and Walk returns it.
func Walk(paths []string, fn func(path string, err error) error) error {
	for _, arg := range paths {
		fi, err := os.Stat(arg)
		if err != nil {
			if err := fn(arg, pathError(arg, err)); err != nil {
				return err
			}
			continue
		}
		if !fi.IsDir() {
			if err := fn(arg, nil); err != nil {
				return err
			}
			continue
		}
		if err := walkDir(arg, fn); err != nil {
			return err
		}
	}
	return nil
}

// stop carries fn's error through filepath.WalkDir, so that fn may return even fs.SkipDir.
type stop struct{ err error }

func (s *stop) Error() string { return s.err.Error() }

func walkDir(root string, fn func(string, error) error) error {
	// filepath.WalkDir does not follow a root that is a symlink; with a trailing slash, the root's
	// Lstat resolves the link. Paths below still read root/name (Join cleans the slash).
	start := root
	if fi, err := os.Lstat(root); err == nil && fi.Mode()&fs.ModeSymlink != 0 && !strings.HasSuffix(root, "/") {
		start = root + "/"
	}
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		var ferr error
		switch {
		case err != nil: // a folder that cannot be read (fn was called for it before, with nil)
			if ferr = fn(p, pathError(p, err)); ferr == nil {
				if d != nil && d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
		case d.IsDir():
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			ferr = fn(p, manifest.Errorf(manifest.FileNotRegular, "%s: is a symlink inside a folder; not followed", p))
		case d.Type().IsRegular():
			ferr = fn(p, nil)
		default:
			ferr = fn(p, manifest.Errorf(manifest.FileNotRegular, "%s: is %s inside a folder; not read", p, typeName(d.Type())))
		}
		if ferr != nil {
			return &stop{ferr}
		}
		return nil
	})
	var s *stop
	if errors.As(err, &s) {
		return s.err
	}
	return err
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
