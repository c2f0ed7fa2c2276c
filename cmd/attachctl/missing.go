package main

import (
	"fmt"
	"sync"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// storeMissing reports whether b is a store that does not exist (a backend that cannot tell is
// taken to exist).
func (g globals) storeMissing(b store.Backend) bool {
	e := b.Features().Exister
	if e == nil {
		return false
	}
	exists, err := e.Exists(g.ctx)
	return err == nil && !exists
}

// sayIfMissing writes one line on standard error when b is a store that does not exist (unless
// --quiet): sweep takes it as empty and exits 0 (a chat that is gone needs no sweeping), but a
// typo in a crontab's --store must not succeed silently forever.
func (g globals) sayIfMissing(b store.Backend) {
	if !g.quiet && g.storeMissing(b) {
		g.summary("%s: no store at %s (it does not exist): nothing to do", g.cmd, manifest.Quote(b.Location()))
	}
}

// needStore is exit 10 with one line naming the store when b does not exist: verify, ls, rm,
// touch and resolve on a mistyped --store must not pass as "nothing to do".
func (g globals) needStore(b store.Backend) error {
	if !g.storeMissing(b) {
		return nil
	}
	hint := "check --store"
	if !g.storeGiven() {
		hint = "the default store; give the chat's store with --store DIR or ATTACHCTL_STORE"
	}
	personLine(g.stderr, fmt.Sprintf("attachctl: %s: no store at %s: it does not exist (exit %d); %s",
		g.cmd, escapeLine(manifest.Quote(b.Location())), exitNoStore, hint))
	return exitError{exitNoStore}
}

// needStoreWhenNeeded is needStore for a store opened at the first record that needs it
// (storeWhenNeeded): called before that record's work, once.
func (g globals) needStoreWhenNeeded(open func() (store.Backend, error)) func() error {
	return sync.OnceValue(func() error {
		b, err := open()
		if err != nil {
			return nil // the record's work reports it
		}
		return g.needStore(b)
	})
}

// madeStore returns a function to call when a command that may make the store (upload, prepare,
// store init) has run: it says once on standard error, unless --quiet, that the store was made,
// so that a mistyped --store is seen.
func (g globals) madeStore(cmd string, b store.Backend) func() {
	if g.quiet || !g.storeMissing(b) {
		return func() {}
	}
	return sync.OnceFunc(func() {
		if !g.storeMissing(b) {
			g.summary("%s: made a new store at %s", cmd, manifest.Quote(b.Location()))
		}
	})
}

// lockedExit is exit 11 when err (or one it joins) is store.locked, else exit 1: the lock of the
// store was not had within --wait, which a script may want to retry.
func lockedExit(err error) exitError {
	for _, e := range joined(err) {
		if fault.CodeOf(e) == fault.StoreLocked {
			return exitError{exitLocked}
		}
	}
	return exitError{exitFailed}
}
