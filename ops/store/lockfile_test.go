package store

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// fakeLockFile is a lock file that is free after busy tries, whose holder is text.
type fakeLockFile struct {
	busy  int
	err   error
	text  string
	tries int
}

func (f *fakeLockFile) Try() (bool, error) {
	f.tries++
	return f.tries > f.busy, f.err
}
func (f *fakeLockFile) Holder() string        { return f.text }
func (f *fakeLockFile) SetHolder(line string) { f.text = line }

// TestTakeLockFile: a lock busy for a while is had once it is free, within the wait; an exclusive
// hold names this process, a shared one names none; a lock not had within the wait is
// store.locked naming the lock, where it is and its holder, but not a holder of this host whose
// pid is gone; a failure of the lock itself is returned as it is.
func TestTakeLockFile(t *testing.T) {
	f := &fakeLockFile{busy: 3}
	if err := TakeLockFile(f, true, time.Second, "/s", "marker", "/s/.attachctl/lock"); err != nil || f.tries != 4 {
		t.Fatalf("a lock free after 3 tries: %v after %d tries", err, f.tries)
	}
	if h, ok := ParseHolder(f.text); !ok || h.PID != Me().PID {
		t.Fatalf("an exclusive hold names %q, not this process", f.text)
	}
	f = &fakeLockFile{}
	if err := TakeLockFile(f, false, 0, "/s", "marker", "/s/.attachctl/lock"); err != nil || f.text != "" {
		t.Fatalf("a shared hold: %v, names %q", err, f.text)
	}

	other := Holder{PID: 4242, Host: "elsewhere", Since: time.Now().Add(-time.Minute)}
	gone := Holder{PID: 1 << 30, Host: ThisHost(), Since: time.Now()}
	for _, c := range []struct {
		name, tag, holder, want, not string
	}{
		{"held by another host's process", "sweep", other.String(), "the sweep lock (another sweep or rm is running) /p is held by pid 4242 on host elsewhere", ""},
		{"held by a process gone", "marker", gone.String(), "the marker lock /p is held;", fmt.Sprint(gone.PID)},
		{"held, naming none", "limits", "", "the limits lock /p is held;", "by pid"},
	} {
		f := &fakeLockFile{busy: 1 << 30, text: c.holder}
		start := time.Now()
		err := TakeLockFile(f, true, 30*time.Millisecond, "/s", c.tag, "/p")
		if fault.CodeOf(err) != fault.StoreLocked || !strings.Contains(err.Error(), "store /s: "+c.want) ||
			c.not != "" && strings.Contains(err.Error(), c.not) {
			t.Errorf("%s: %v; want store.locked saying %q", c.name, err, c.want)
		}
		if d := time.Since(start); d < 30*time.Millisecond || d > time.Second || f.tries < 3 {
			t.Errorf("%s: gave up after %v and %d tries; want a few tries within the wait", c.name, d, f.tries)
		}
	}

	bad := errors.New("bad descriptor")
	if err := TakeLockFile(&fakeLockFile{err: bad}, true, time.Second, "/s", "marker", "/p"); err != bad {
		t.Fatalf("a failing lock: %v; want its error as it is", err)
	}
}
