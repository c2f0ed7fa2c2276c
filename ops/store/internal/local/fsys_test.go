//go:build unix

package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"golang.org/x/sys/unix"
)

// The tests of the package's file-system helpers, one of each: a folder opened below a descriptor
// (openDirAt, openSubdir, ownDir), a file made new (createFd, writeNewAt), a file opened and
// checked by its stat (readFileAt, readGuarded), a file written by name (replaceAt), a folder
// listed when it is there (listIfThere). Each runs over the same folder of one entry of each kind
// (fixture): a link, a FIFO, files and folders of other modes and of another user.

// nobody is the user the fixture gives its "other" entries to (the tests run as root under CI).
const nobody = 65534

// fixture makes a folder holding one entry of each kind and opens it; outside is a folder beside
// it that the links point into, holding secret (0600, "secret"). The descriptor is closed at the
// test's end.
func fixture(t *testing.T) (dirfd int, dir, outside string) {
	t.Helper()
	base := t.TempDir()
	dir, outside = filepath.Join(base, "dir"), filepath.Join(base, "outside")
	must(t, os.Mkdir(dir, 0o700))
	must(t, os.Mkdir(outside, 0o700))
	must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o600))
	must(t, os.Mkdir(filepath.Join(outside, "folder"), 0o700))
	file := func(name string, mode os.FileMode) {
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, []byte("hello"), 0o600))
		must(t, os.Chmod(p, mode))
	}
	folder := func(name string, mode os.FileMode) {
		p := filepath.Join(dir, name)
		must(t, os.Mkdir(p, 0o700))
		must(t, os.Chmod(p, mode))
	}
	file("file", 0o600)
	file("ro", 0o400)
	file("open", 0o644)
	file("exec", 0o700)
	file("two", 0o400)
	must(t, os.Link(filepath.Join(dir, "two"), filepath.Join(base, "two-again")))
	file("other", 0o400)
	folder("folder", 0o700)
	folder("wide", 0o755)
	folder("otherdir", 0o700)
	must(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "link")))
	must(t, os.Symlink(filepath.Join(outside, "folder"), filepath.Join(dir, "dirlink")))
	must(t, os.Symlink(filepath.Join(outside, "none"), filepath.Join(dir, "dangling")))
	must(t, unix.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	if os.Geteuid() == 0 {
		must(t, os.Lchown(filepath.Join(dir, "other"), nobody, nobody))
		must(t, os.Lchown(filepath.Join(dir, "otherdir"), nobody, nobody))
	}
	fd, err := unix.Open(dir, noFollowDir, 0)
	must(t, err)
	t.Cleanup(func() { unix.Close(fd) })
	return fd, dir, outside
}

// asRoot skips a case that needs an entry of another user where the test cannot make one; under
// CI the tests run as root, so it never skips there.
func asRoot(t *testing.T, other bool) {
	t.Helper()
	if other && os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root to give an entry to another user")
		}
		t.Skip("needs root to give an entry to another user")
	}
}

// modeOf is the permission bits of p, a link not followed.
func modeOf(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	must(t, err)
	return fi.Mode().Perm()
}

// untouched fails the test unless the file the links point at still holds what it held.
func untouched(t *testing.T, outside string) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(outside, "secret")); err != nil || string(b) != "secret" {
		t.Fatalf("the file outside, behind a link: %q, %v", b, err)
	}
	if exists(filepath.Join(outside, "none")) {
		t.Fatal("a file was made outside, through a dangling link")
	}
}

// noBlock runs do, which may open the FIFO at p, and fails the test when it blocks there: after
// a while the FIFO is opened from the other side, which lets it go.
func noBlock(t *testing.T, p string, do func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- do() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		if fd, err := unix.Open(p, unix.O_RDWR|unix.O_NONBLOCK|unix.O_NOFOLLOW, 0); err == nil {
			defer unix.Close(fd)
		}
		<-done
		t.Fatalf("%s: blocked on a FIFO", p)
		return nil
	}
}

// The folder helpers open a real folder below a descriptor and nothing else: a link to a folder,
// a FIFO and a file are refused (none blocks); openSubdir makes a missing folder 0700 and refuses
// an existing one of another user or with group or other access; ownDir, the step into a
// partial's tree, refuses another user's folder and makes one of another mode 0700.
func TestFolderHelpers(t *testing.T) {
	cases := []struct {
		name  string
		other bool
		at    []error    // openDirAt's error, one of (none: opened)
		sub   fault.Code // openSubdir's
		own   fault.Code // ownDir's
		mode  os.FileMode
	}{
		{name: "folder", mode: 0o700},
		{name: "wide", sub: fault.UploadUnreadable, mode: 0o700},
		{name: "otherdir", other: true, sub: fault.UploadUnreadable, own: fault.UploadUnreadable, mode: 0o700},
		{name: "missing", at: []error{unix.ENOENT}, mode: 0o700},
		{name: "dirlink", at: []error{unix.ELOOP, unix.ENOTDIR}, sub: fault.UploadUnreadable, own: fault.UploadUnreadable},
		{name: "link", at: []error{unix.ELOOP, unix.ENOTDIR}, sub: fault.UploadUnreadable, own: fault.UploadUnreadable},
		{name: "fifo", at: []error{unix.ENOTDIR}, sub: fault.UploadUnreadable, own: fault.UploadUnreadable},
		{name: "file", at: []error{unix.ENOTDIR}, sub: fault.UploadUnreadable, own: fault.UploadUnreadable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			asRoot(t, c.other)
			for _, step := range []string{"openDirAt", "openSubdir", "ownDir"} {
				dirfd, dir, outside := fixture(t)
				p := filepath.Join(dir, c.name)
				var fd int
				var err error
				want := ""
				switch step {
				case "openDirAt":
					fd, err = openDirAt(dirfd, c.name)
					if (len(c.at) == 0) != (err == nil) || err != nil && !slices.ContainsFunc(c.at, func(e error) bool { return errors.Is(err, e) }) {
						t.Fatalf("%s: %v, want %v", step, err, c.at)
					}
				case "openSubdir":
					fd, err = openSubdir(dirfd, c.name, p)
					want = string(c.sub)
				case "ownDir":
					fd, err = ownDir(dirfd, c.name, p)
					want = string(c.own)
				}
				if step != "openDirAt" && string(fault.CodeOf(err)) != want {
					t.Fatalf("%s: %v, want code %q", step, err, want)
				}
				untouched(t, outside)
				if err != nil {
					continue
				}
				var st, named unix.Stat_t
				must(t, unix.Fstat(fd, &st))
				must(t, unix.Lstat(p, &named))
				unix.Close(fd)
				if st.Ino != named.Ino || st.Mode&unix.S_IFMT != unix.S_IFDIR {
					t.Fatalf("%s: opened something other than the folder %s", step, p)
				}
				switch got := modeOf(t, p); {
				case step == "ownDir" && got != c.mode:
					t.Fatalf("%s: mode %04o, want %04o", step, got, c.mode)
				case step != "openDirAt" && c.name == "missing" && got != DirMode:
					t.Fatalf("%s: made the folder %04o", step, got)
				}
			}
		})
	}
}

// The store's internal folders are written to only when they are the user's and closed to
// others: an upload begun in a store whose .attachctl or partial folder was opened to the group
// or others, or given to another user, is refused with upload.unreadable, and the folder is left
// as it was.
func TestInternalFoldersOwned(t *testing.T) {
	for _, c := range []struct {
		name, rel string
		mode      os.FileMode
		other     bool
	}{
		{"internal folder open to others", InternalDir, 0o755, false},
		{"partial folder open to the group", filepath.Join(InternalDir, partialDir), 0o770, false},
		{"partial folder of another user", filepath.Join(InternalDir, partialDir), 0o700, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			asRoot(t, c.other)
			s := testStore(t)
			if _, err := s.Begin(context.Background(), "a.txt", 1); err != nil {
				t.Fatal(err) // the folders are made
			}
			p := filepath.Join(s.Dir, c.rel)
			must(t, os.Chmod(p, c.mode))
			if c.other {
				must(t, os.Lchown(p, nobody, nobody))
			}
			_, err := s.Begin(context.Background(), "b.txt", 1)
			if fault.CodeOf(err) != fault.UploadUnreadable {
				t.Fatalf("Begin: %v, want code %q", err, fault.UploadUnreadable)
			}
			if got := modeOf(t, p); got != c.mode {
				t.Fatalf("the folder's mode was changed to %04o", got)
			}
		})
	}
}

// createFd and writeNewAt make a file that is not there, of the mode asked, holding what was
// given, and never anything where a name is taken: not through a link (not even a dangling one,
// which would make a file outside), not on a FIFO (without blocking), not over a file of another
// mode, which keeps its bytes and mode.
func TestCreateHelpers(t *testing.T) {
	for _, name := range []string{"new", "dangling", "link", "fifo", "open", "folder"} {
		t.Run(name, func(t *testing.T) {
			for _, how := range []string{"createFd", "writeNewAt"} {
				dirfd, dir, outside := fixture(t)
				p := filepath.Join(dir, name)
				err := noBlock(t, p, func() error {
					if how == "writeNewAt" {
						return writeNewAt(dirfd, name, []byte("made"), ReadOnlyMode, true)
					}
					fd, err := createFd(dirfd, name, unix.O_WRONLY, ReadOnlyMode, []byte("made"))
					if err == nil {
						unix.Close(fd)
					}
					return err
				})
				untouched(t, outside)
				if name != "new" {
					if !errors.Is(err, unix.EEXIST) {
						t.Fatalf("%s over %s: %v, want EEXIST", how, name, err)
					}
					if name == "open" {
						if b, _ := os.ReadFile(p); string(b) != "hello" || modeOf(t, p) != 0o644 {
							t.Fatalf("%s changed the file there: %q, %04o", how, b, modeOf(t, p))
						}
					}
					continue
				}
				must(t, err)
				if b, _ := os.ReadFile(p); string(b) != "made" || modeOf(t, p) != ReadOnlyMode {
					t.Fatalf("%s: %q, mode %04o", how, b, modeOf(t, p))
				}
			}
		})
	}
}

// readFileAt reads a regular file whole (up to its limit) and nothing else: not through a link,
// not a FIFO (without blocking) or a folder. readGuarded, the guarded open's read, also refuses
// a file of another user, one that gives group or others access or is not 0400 (or an older
// store's 0600), and one with a second hard link; what is not there is upload.missing.
func TestReadHelpers(t *testing.T) {
	cases := []struct {
		name    string
		other   bool
		regular error      // readFileAt's with regular (nil: reads "hello")
		guarded fault.Code // readGuarded's
		why     string     // in readGuarded's message
	}{
		{name: "file"},
		{name: "ro"},
		{name: "open", guarded: fault.UploadUnreadable, why: "mode 0644 gives group or others access"},
		{name: "exec", guarded: fault.UploadUnreadable, why: "mode 0700, not 0400"},
		{name: "two", guarded: fault.UploadUnreadable, why: "2 hard links, not 1"},
		{name: "other", other: true, guarded: fault.UploadUnreadable, why: "owned by uid 65534"},
		{name: "link", regular: unix.ELOOP, guarded: fault.UploadUnreadable, why: "a symlink"},
		{name: "dangling", regular: unix.ELOOP, guarded: fault.UploadUnreadable, why: "a symlink"},
		{name: "fifo", regular: errNotRegular, guarded: fault.UploadUnreadable, why: "not a regular file"},
		{name: "folder", regular: errNotRegular, guarded: fault.UploadUnreadable, why: "not a regular file"},
		{name: "missing", regular: unix.ENOENT, guarded: fault.UploadMissing},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			asRoot(t, c.other)
			dirfd, dir, outside := fixture(t)
			p := filepath.Join(dir, c.name)
			b, err := readFileAt(dirfd, c.name, p, 1<<10, regular)
			if !errors.Is(err, c.regular) || (c.regular == nil) != (err == nil) || (err == nil && string(b) != "hello") {
				t.Fatalf("readFileAt: %q, %v; want %v", b, err, c.regular)
			}
			if b, err := readFileAt(dirfd, c.name, p, 2, regular); err == nil && string(b) != "he" {
				t.Fatalf("readFileAt up to 2 bytes: %q", b)
			}
			b, err = readGuarded(dirfd, c.name, p, "id", 1<<10)
			if fault.CodeOf(err) != c.guarded || (err == nil && string(b) != "hello") {
				t.Fatalf("readGuarded: %q, %v; want code %q", b, err, c.guarded)
			}
			if err != nil && !strings.Contains(err.Error(), c.why) {
				t.Fatalf("readGuarded: %v, want it to say %q", err, c.why)
			}
			untouched(t, outside)
		})
	}
}

// replaceAt puts a new regular file of mode 0600 holding what was given at a name, whatever was
// there: a link only loses its name (the file behind it is not written), a FIFO is replaced
// without blocking, a file of another mode is replaced by one of 0600; its times are those asked.
// A folder there is not replaced, and the new file is not left behind. A leftover of the named
// temporary file (tmp), a link even, is removed, not written through.
func TestReplaceAt(t *testing.T) {
	at := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, name := range []string{"new", "file", "open", "link", "dangling", "fifo", "folder"} {
		for _, tmp := range []string{"", "link"} {
			if tmp == name {
				continue // the leftover would be the file itself
			}
			t.Run(name+"/tmp="+tmp, func(t *testing.T) {
				dirfd, dir, outside := fixture(t)
				err := replaceAt(dirfd, tmp, name, []byte("new"), at, true)
				untouched(t, outside)
				p := filepath.Join(dir, name)
				if name == "folder" {
					if err == nil || modeOf(t, p) != 0o700 {
						t.Fatalf("replaced a folder: %v", err)
					}
				} else {
					must(t, err)
					fi, err := os.Lstat(p)
					must(t, err)
					b, _ := os.ReadFile(p)
					if !fi.Mode().IsRegular() || fi.Mode().Perm() != FileMode || string(b) != "new" || !fi.ModTime().Equal(at) {
						t.Fatalf("%s: %v %q %v", p, fi.Mode(), b, fi.ModTime())
					}
				}
				ents, err := os.ReadDir(dir)
				must(t, err)
				for _, e := range ents {
					if strings.Contains(e.Name(), ".new-") || (tmp != "" && e.Name() == tmp) {
						t.Fatalf("left behind: %s", e.Name())
					}
				}
			})
		}
	}
}

// listIfThere lists a folder of the store that is there, in order, and reports one that is not
// (fd -1, no error); a link or a FIFO in its place is refused, never listed or waited on.
func TestListIfThere(t *testing.T) {
	for _, c := range []struct {
		name  string
		make  func(t *testing.T, p, outside string)
		code  fault.Code
		there bool
	}{
		{"folder of another mode", func(t *testing.T, p, _ string) {
			must(t, os.Mkdir(p, 0o755))
			for _, n := range []string{"b", "a", "c"} {
				must(t, os.WriteFile(filepath.Join(p, n), nil, 0o600))
			}
		}, "", true},
		{"missing", func(*testing.T, string, string) {}, "", false},
		{"link", func(t *testing.T, p, outside string) { must(t, os.Symlink(outside, p)) }, fault.UploadUnreadable, false},
		{"fifo", func(t *testing.T, p, _ string) { must(t, unix.Mkfifo(p, 0o600)) }, fault.UploadUnreadable, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := testStore(t)
			outside := t.TempDir()
			must(t, os.WriteFile(filepath.Join(outside, "z"), nil, 0o600))
			must(t, os.MkdirAll(s.internal(), 0o700))
			c.make(t, s.internal("x"), outside)
			fd, names, err := s.listIfThere(InternalDir, "x")
			if fd >= 0 {
				unix.Close(fd)
			}
			if fault.CodeOf(err) != c.code || (fd >= 0) != c.there {
				t.Fatalf("fd %d, %v; want code %q, there %v", fd, err, c.code, c.there)
			}
			if want := map[bool]string{true: "a b c"}[c.there]; strings.Join(names, " ") != want {
				t.Fatalf("listed %q, want %q", names, want)
			}
		})
	}
}

// verify's rules of an upload's folder (checkTop) take only files of the current user: a marker
// given to another user is refused, as the guarded open refuses such a file.
func TestCheckTopOwner(t *testing.T) {
	asRoot(t, true)
	for _, other := range []bool{false, true} {
		s := newStore(t)
		id := finishedUpload(t, s, "a.txt", []byte("hello"))
		marker := filepath.Join(s.UploadDir(id), UsedName)
		must(t, os.WriteFile(marker, nil, 0o600))
		if other {
			must(t, os.Chown(marker, nobody, nobody))
		}
		err := s.Check(context.Background(), id)
		if want := map[bool]fault.Code{true: fault.UploadUnreadable}[other]; fault.CodeOf(err) != want {
			t.Fatalf("marker of another user %v: %v, want code %q", other, err, want)
		}
		if other && !strings.Contains(err.Error(), "not by the current user") {
			t.Fatalf("%v: does not say why", err)
		}
	}
}
