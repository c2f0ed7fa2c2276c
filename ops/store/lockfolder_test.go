package store

import (
	"errors"
	"io"
	"io/fs"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// fakeOpenLockFile is an open lock file free after busy tries, whose text is what it says, that
// records what was done to it.
type fakeOpenLockFile struct {
	fakeLockFile
	mode   fs.FileMode // given by Chmod (0: none)
	closed int
}

func (f *fakeOpenLockFile) ReadAt(b []byte, off int64) (int, error) {
	n := copy(b, f.text[off:])
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

func (f *fakeOpenLockFile) WriteAt(b []byte, off int64) (int, error) {
	f.text = f.text[:off] + string(b) + f.text[min(int(off)+len(b), len(f.text)):]
	return len(b), nil
}

func (f *fakeOpenLockFile) Truncate(n int64) error       { f.text = f.text[:n]; return nil }
func (f *fakeOpenLockFile) Chmod(mode fs.FileMode) error { f.mode = mode; return nil }
func (f *fakeOpenLockFile) Close() error                 { f.closed++; return nil }

// TestHoldLockFile: what a store kept as files does with its lock file around TakeLockFile. A file
// that is not a regular file is upload.unreadable and closed untried; one of the user's of another
// mode is given FileMode, one of another user's not; an exclusive hold is let go with its file
// emptied (what a lock file names holds it), a shared one with the file as it is (another's line
// stays); a lock held by another is store.locked naming the holder its file names, the file
// closed; a failure to lock is coded and the file closed; Unlock is safe on nil and twice.
func TestHoldLockFile(t *testing.T) {
	const path = "/s/.attachctl/lock"
	own := FileStat{Name: "lock", Perm: uint32(FileMode), Own: true, Links: 1}
	hold := func(f *fakeOpenLockFile, st FileStat, exclusive bool) (*HeldLock, error) {
		return HoldLockFile(f, st, exclusive, 0, "/s", "marker", path)
	}

	fifo := own
	fifo.Type = fs.ModeNamedPipe
	f := &fakeOpenLockFile{}
	if _, err := hold(f, fifo, true); fault.CodeOf(err) != fault.UploadUnreadable || f.tries != 0 || f.closed != 1 {
		t.Fatalf("a FIFO: %v, %d tries, closed %d times; want upload.unreadable, untried and closed", err, f.tries, f.closed)
	}

	loose := own
	loose.Perm = 0o644
	f = &fakeOpenLockFile{}
	h, err := hold(f, loose, true)
	if err != nil || f.mode != FileMode {
		t.Fatalf("a lock file of the user's of mode 0644: %v, given mode %v; want held and given %v", err, f.mode, FileMode)
	}
	if _, ok := ParseHolder(f.text); !ok {
		t.Fatalf("an exclusive hold names %q, not this process", f.text)
	}
	if err := h.Unlock(); err != nil || f.text != "" || f.closed != 1 {
		t.Fatalf("Unlock of an exclusive hold: %v, the file says %q, closed %d times; want it emptied and closed", err, f.text, f.closed)
	}
	if err := h.Unlock(); err != nil || f.closed != 1 {
		t.Fatalf("a second Unlock: %v, closed %d times", err, f.closed)
	}
	if err := (*HeldLock)(nil).Unlock(); err != nil {
		t.Fatalf("Unlock of nil: %v", err)
	}

	others := loose
	others.Own, others.Uid = false, 4242
	f = &fakeOpenLockFile{fakeLockFile: fakeLockFile{text: "pid=7 host=h since=2026-12-02T03:17:00Z\n"}}
	h, err = hold(f, others, false)
	if err != nil || f.mode != 0 {
		t.Fatalf("a lock file of another user's: %v, given mode %v; want held, its mode left", err, f.mode)
	}
	if h.Unlock(); f.text == "" || f.closed != 1 {
		t.Fatalf("Unlock of a shared hold emptied the file (%q) or did not close it (%d)", f.text, f.closed)
	}

	f = &fakeOpenLockFile{fakeLockFile: fakeLockFile{err: syscall.EIO}}
	if _, err := hold(f, own, true); fault.CodeOf(err) != fault.UploadUnreadable || !errors.Is(err, syscall.EIO) || f.closed != 1 {
		t.Fatalf("a lock that fails: %v, closed %d times; want upload.unreadable keeping its cause, closed", err, f.closed)
	}
	f = &fakeOpenLockFile{fakeLockFile: fakeLockFile{busy: 1 << 30, text: "pid=4242 host=elsewhere since=2026-12-02T03:17:00Z\n"}}
	_, err = HoldLockFile(f, own, true, time.Millisecond, "/s", "marker", path)
	if fault.CodeOf(err) != fault.StoreLocked || !strings.Contains(err.Error(), "is held by pid 4242 on host elsewhere") || f.closed != 1 {
		t.Fatalf("a lock held by another: %v, closed %d times; want store.locked naming its holder, closed", err, f.closed)
	}
}

// TestOwnFolder: a folder where the store keeps what it writes is refused when another user's or
// open to group or others, naming why; one of the user's without such access is taken as it is;
// with mend, the user's folder of another mode is given 0700 (and a failure to is coded), but
// another's is still refused.
func TestOwnFolder(t *testing.T) {
	const path = "/s/.attachctl/partial"
	for _, c := range []struct {
		name  string
		st    FileStat
		mend  bool
		code  fault.Code
		msg   string
		chmod fs.FileMode
	}{
		{"own 0700", FileStat{Type: fs.ModeDir, Perm: 0o700, Own: true}, false, "", "", 0},
		{"own 0500", FileStat{Type: fs.ModeDir, Perm: 0o500, Own: true}, false, "", "", 0},
		{"own 0750", FileStat{Type: fs.ModeDir, Perm: 0o750, Own: true}, false, fault.UploadUnreadable, path + ": folder mode 0750, not 0700", 0},
		{"another's", FileStat{Type: fs.ModeDir, Perm: 0o700, Uid: 4242}, false, fault.UploadUnreadable, path + ": owned by uid 4242, not by the current user", 0},
		{"mended", FileStat{Type: fs.ModeDir, Perm: 0o755, Own: true}, true, "", "", DirMode},
		{"another's, mend", FileStat{Type: fs.ModeDir, Perm: 0o755, Uid: 4242}, true, fault.UploadUnreadable, path + ": owned by uid 4242, not by the current user", 0},
	} {
		var given fs.FileMode
		err := OwnFolder(c.st, path, c.mend, func(m fs.FileMode) error { given = m; return nil })
		if fault.CodeOf(err) != c.code || c.code != "" && fault.AsError(err, "").Message != c.msg || given != c.chmod {
			t.Errorf("%s: %v, chmod %v; want %q %q, chmod %v", c.name, err, given, c.code, c.msg, c.chmod)
		}
	}
	err := OwnFolder(FileStat{Type: fs.ModeDir, Perm: 0o755, Own: true}, path, true, func(fs.FileMode) error { return syscall.EPERM })
	if fault.CodeOf(err) != fault.UploadUnreadable || !errors.Is(err, syscall.EPERM) {
		t.Errorf("a mend that fails: %v; want upload.unreadable keeping its cause", err)
	}
}
