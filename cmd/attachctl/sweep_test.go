package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/open"
)

// Helpers for the verify, touch and sweep scripts:
//
//	flip GLOB...             inverts the first byte of each matching file
//	backdate STORE DURATION [NAME...]  sets every finished upload's (or only those named NAME)
//	                         "made", and its last use if it has one, DURATION back in time
//	holdsweeplock STORE HELD RELEASE  takes the store's sweep lock, creates HELD, and holds the
//	                         lock until RELEASE exists
//	waitfile FILE            waits until FILE exists
func init() {
	helperCmds["flip"] = func(sc helper, args []string) error {
		return eachMatch(sc, args, func(p string) error {
			b, err := os.ReadFile(p)
			if err == nil && len(b) == 0 {
				err = fmt.Errorf("%s is empty", p)
			}
			if err != nil {
				return err
			}
			b[0] ^= 0xff
			return os.WriteFile(p, b, 0o600)
		})
	}
	helperCmds["backdate"] = func(sc helper, args []string) error {
		if len(args) < 2 {
			return fmt.Errorf("usage: backdate STORE DURATION [NAME...]")
		}
		dir := sc.abs(args[0])
		b, err := open.Store(context.Background(), dir, open.Options{})
		if err != nil {
			return err
		}
		d, err := time.ParseDuration(args[1])
		if err != nil {
			return err
		}
		names := map[string]bool{}
		for _, n := range args[2:] {
			names[n] = true
		}
		l, err := b.List(context.Background())
		if err != nil {
			return err
		}
		for _, e := range l.Entries {
			if !e.Finished {
				continue
			}
			id := e.ID
			m, err := b.Info(context.Background(), id)
			if err != nil {
				return err
			}
			if len(names) > 0 && !names[m.Name] {
				continue
			}
			m.Made = m.Made.Add(-d)
			js, _ := json.Marshal(m)
			if err := os.WriteFile(filepath.Join(dir, id, store.MetaName), js, 0o600); err != nil {
				return err
			}
			// A re-upload of the same file marks its upload used: that use goes back too.
			used := filepath.Join(dir, id, store.UsedName)
			if fi, err := os.Lstat(used); err == nil {
				at := fi.ModTime().Add(-d)
				if err := os.Chtimes(used, at, at); err != nil {
					return err
				}
			}
		}
		return nil
	}
	testCommands["holdsweeplock"] = func() int {
		// Through the store seam, as a sweep takes it: a folder, or an s3:// URI (the scripts'
		// server, path-style).
		b, err := open.Store(context.Background(), os.Args[1], open.Options{S3: open.S3Options{PathStyle: true}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		sw, err := b.Sweep(context.Background(), 0, false)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer sw.Close()
		os.WriteFile(os.Args[2], nil, 0o600)
		return waitFor(os.Args[3])
	}
	testCommands["waitfile"] = func() int { return waitFor(os.Args[1]) }
}

// waitFor polls for path, for at most a minute.
func waitFor(path string) int {
	for i := 0; i < 6000; i++ {
		if _, err := os.Stat(path); err == nil {
			return 0
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Fprintln(os.Stderr, "gave up waiting for", path)
	return 1
}
