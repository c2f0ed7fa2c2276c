package store

import (
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// LockName is how a store.locked message names the store's lock tag ("marker", "sweep",
// "limits"), one wording on every backend: the sweep lock says what holds it, a sweep or an rm.
func LockName(tag string) string {
	if tag == "sweep" {
		return "the sweep lock (another sweep or rm is running)"
	}
	return "the " + tag + " lock"
}

// LockFile is a lock file of a backend, open for one hold (the local store's flock, shared or
// exclusive as the backend asks): its primitives. TakeLockFile is the rest.
type LockFile interface {
	// Try takes the lock without waiting: false when another holds it.
	Try() (bool, error)
	// Holder is what the file says of its holder ("": nothing, or it cannot be read).
	Holder() string
	// SetHolder makes line all the file says ("": it is emptied).
	SetHolder(line string)
}

// TakeLockFile takes the lock file l (at path, the lock tag of the store at loc), trying again
// with a short backoff until wait runs out, so that a wait ends on time. An exclusive hold names
// this process in the file (Me), so that a command that cannot have it names who has it; the
// backend empties the file before it lets go (SetHolder ""), so that what a file names holds it,
// or was killed holding it: a holder of this host whose pid is gone is not named, the lock being
// held now by another (a shared hold, which names none). A lock not had within wait is
// store.locked, naming the lock (LockName) and its holder (HeldBy); Try's error is returned as it
// is, for the backend to code.
func TakeLockFile(l LockFile, exclusive bool, wait time.Duration, loc, tag, path string) error {
	deadline := time.Now().Add(wait)
	for pause := 50 * time.Microsecond; ; pause = min(2*pause, 20*time.Millisecond) {
		ok, err := l.Try()
		switch {
		case err != nil:
			return err
		case ok && exclusive:
			l.SetHolder(Me().String() + "\n")
			return nil
		case ok:
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			h, known := ParseHolder(l.Holder())
			known = known && !(h.Host == ThisHost() && PIDGone(h.PID))
			return fault.Errorf(fault.StoreLocked, "store %s: %s %s %s", loc, LockName(tag), path, HeldBy(h, known, wait))
		}
		time.Sleep(min(pause, left))
	}
}
