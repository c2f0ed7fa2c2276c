package local

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// writeWatch sees what is done to the files and folders in some folders, through inotify: the
// kernel queues an event for a folder's entry when the call that wrote, truncated, made or renamed
// it returns, whichever goroutine, thread or descriptor made the call. It is about those folders
// only. A count of the whole process's bytes written (/proc/self/io's wchar) is not: it adds up
// every write(2) of the process, the Go runtime's own included (each wake-up of its network
// poller writes 8 bytes to an eventfd, more often the busier the machine), and whatever another
// goroutine writes meanwhile.
type writeWatch struct {
	fd   int
	dirs map[int32]string // the folder of each watch descriptor
}

// watchMask: a byte written or a size changed (IN_MODIFY), an entry made (IN_CREATE) or renamed
// into a folder (IN_MOVED_TO).
const watchMask = unix.IN_MODIFY | unix.IN_CREATE | unix.IN_MOVED_TO

// watchWrites starts watching every folder under roots (the roots included).
func watchWrites(t *testing.T, roots ...string) *writeWatch {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatalf("inotify: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	w := &writeWatch{fd: fd, dirs: map[int32]string{}}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			wd, err := unix.InotifyAddWatch(fd, p, watchMask|unix.IN_ONLYDIR|unix.IN_DONT_FOLLOW)
			if err != nil {
				return err
			}
			w.dirs[int32(wd)] = p
			return nil
		})
		if err != nil {
			t.Fatalf("watching %s: %v", root, err)
		}
	}
	return w
}

// change is one event of a writeWatch: what was done (inotify's mask) to the entry at path.
type change struct {
	path string
	mask uint32
}

// changes are the events queued since the watch started or since the last call. It fails the
// test when the kernel's queue overflowed: then some were lost.
func (w *writeWatch) changes(t *testing.T) []change {
	t.Helper()
	var out []change
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(w.fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EAGAIN) {
			return out
		}
		if err != nil {
			t.Fatalf("reading inotify events: %v", err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				t.Fatal("inotify's queue overflowed: some changes were not seen")
			}
			if ev.Mask&unix.IN_IGNORED != 0 {
				continue // a watched folder went away (its removal was seen in its parent's events)
			}
			p := w.dirs[ev.Wd]
			if i := indexNUL(name); i > 0 {
				p = filepath.Join(p, string(name[:i]))
			}
			out = append(out, change{path: p, mask: ev.Mask})
		}
	}
}

// wrote: a byte written to the entry, or its size changed.
func (c change) wrote() bool { return c.mask&unix.IN_MODIFY != 0 }

// made: the entry was made in the folder, or renamed into it.
func (c change) made() bool { return c.mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 }

// indexNUL is where the NUL padding after an event's name starts.
func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return len(b)
}

// TestWriteWatch: the watch sees a byte written to a file in a folder under its root, a file cut
// short, an entry made and one renamed in, and nothing that the process does outside its roots.
func TestWriteWatch(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"written", "cut"} {
		if err := os.WriteFile(filepath.Join(sub, f), []byte("content"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	w := watchWrites(t, root)
	stop := busyElsewhere(t)
	os.WriteFile(outside, []byte("outside"), 0o600)
	stop()
	if c := w.changes(t); len(c) != 0 {
		t.Fatalf("changes outside the root seen: %v", c)
	}

	f, err := os.OpenFile(filepath.Join(sub, "written"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("C"), 0) // same size, same blocks: only a watch of writes sees it
	f.Close()
	os.Truncate(filepath.Join(sub, "cut"), 1)
	os.Mkdir(filepath.Join(root, "a", "new"), 0o700)
	os.Rename(outside, filepath.Join(sub, "in"))
	var wrote, made []string
	for _, c := range w.changes(t) {
		rel, _ := filepath.Rel(root, c.path)
		if c.wrote() {
			wrote = append(wrote, rel)
		}
		if c.made() {
			made = append(made, rel)
		}
	}
	if !slices.Equal(wrote, []string{"a/b/written", "a/b/cut"}) || !slices.Equal(made, []string{"a/new", "a/b/in"}) {
		t.Fatalf("written %v, made %v", wrote, made)
	}
}
