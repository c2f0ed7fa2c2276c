//go:build unix

package local

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// snapshot is every entry under a folder: its kind, mode, mtime and content.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		v := fi.Mode().String() + " " + fi.ModTime().Format(time.RFC3339Nano)
		if fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			v += " " + string(b)
		}
		out[p] = v
		return nil
	})
	return out
}

func sameSnapshot(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for p, v := range before {
		if after[p] != v {
			t.Errorf("%s: %s changed: %q, then %q", what, p, v, after[p])
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s: %s was made outside the store", what, p)
		}
	}
}

// outsideDir is a folder outside the store with a file in it, times in the past so that a
// change shows.
func outsideDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, f := range []string{"victim.txt", "data", "info.json"} {
		body := "outside " + f
		if f == "info.json" {
			body = `{"name":"evil.txt","size":-1,"created":"2020-01-01T00:00:00Z"}`
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(filepath.Join(dir, f), old, old)
	}
	os.Chtimes(dir, old, old)
	return dir
}

// TestGuardedWrites: each way an attacker with write access to the store could point a write of
// attachctl outside it is refused with its code, and nothing outside changes.
func TestGuardedWrites(t *testing.T) {
	type attack struct {
		name  string
		plant func(t *testing.T, s *localStore, id, outside string) // id: an unfinished upload of 5 bytes
		code  fault.Code
	}
	partial := func(s *localStore, id string) string { return filepath.Join(s.Dir, InternalDir, partialDir, id) }
	attacks := []attack{
		{"partial folder is a symlink", func(t *testing.T, s *localStore, id, outside string) {
			os.RemoveAll(partial(s, id))
			os.Symlink(outside, partial(s, id))
		}, fault.UploadUnreadable},
		{"partial data is a hard link to a file outside", func(t *testing.T, s *localStore, id, outside string) {
			os.Remove(filepath.Join(partial(s, id), "data"))
			if err := os.Link(filepath.Join(outside, "data"), filepath.Join(partial(s, id), "data")); err != nil {
				t.Skip("no hard links across these folders:", err)
			}
		}, fault.UploadUnreadable},
		{"partial data is a symlink", func(t *testing.T, s *localStore, id, outside string) {
			os.Remove(filepath.Join(partial(s, id), "data"))
			os.Symlink(filepath.Join(outside, "data"), filepath.Join(partial(s, id), "data"))
		}, fault.UploadUnreadable},
		{"partial info.json is a symlink", func(t *testing.T, s *localStore, id, outside string) {
			os.Remove(filepath.Join(partial(s, id), "info.json"))
			os.Symlink(filepath.Join(outside, "info.json"), filepath.Join(partial(s, id), "info.json"))
		}, fault.UploadUnreadable},
		{".attachctl/partial is a symlink", func(t *testing.T, s *localStore, id, outside string) {
			os.Rename(filepath.Join(s.Dir, InternalDir, partialDir), filepath.Join(t.TempDir(), "moved"))
			os.Symlink(outside, filepath.Join(s.Dir, InternalDir, partialDir))
		}, fault.UploadUnreadable},
		{".attachctl is a symlink", func(t *testing.T, s *localStore, id, outside string) {
			os.Rename(filepath.Join(s.Dir, InternalDir), filepath.Join(t.TempDir(), "moved"))
			os.Symlink(outside, filepath.Join(s.Dir, InternalDir))
		}, fault.UploadUnreadable},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			s := newStore(t)
			id, err := s.Begin(context.Background(), "a.txt", 10)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Chunk(id, 0, strings.NewReader("12345"), 0); err != nil {
				t.Fatal(err)
			}
			outside := outsideDir(t)
			a.plant(t, s, id, outside)
			before := snapshot(t, outside)

			_, err = s.Chunk(id, 5, strings.NewReader("67890"), 0)
			wantCode(t, err, a.code)
			_, err = s.Finish(context.Background(), id, -1, "")
			wantCode(t, err, a.code)
			_, err = s.Status(context.Background(), id)
			wantCode(t, err, a.code)
			if strings.HasPrefix(a.name, ".attachctl") {
				_, err = s.Begin(context.Background(), "b.txt", -1)
				wantCode(t, err, a.code)
				if err := s.MarkUsed(context.Background(), []string{id}, time.Now()); fault.CodeOf(err) == "" {
					t.Fatalf("mark used through a planted link: %v", err)
				}
			}
			if a.name == ".attachctl is a symlink" {
				_, err = openStore(s.Dir, true)
				wantCode(t, err, a.code)
			}
			sameSnapshot(t, "after the writes", before, snapshot(t, outside))
			// Nothing was published: the store has no finished upload.
			if ids, _ := s.IDs(); len(ids) != 0 {
				t.Fatalf("published %v", ids)
			}
		})
	}
}

// TestStoreIsASymlink: a store named by a symlink to a folder is refused before anything is
// made in the folder, by an upload and by every reader.
func TestStoreIsASymlink(t *testing.T) {
	target := t.TempDir()
	link := filepath.Join(t.TempDir(), "store")
	os.Symlink(target, link)
	_, err := openStore(link, true)
	wantCode(t, err, fault.UploadUnreadable)
	_, err = openStore(link, false)
	wantCode(t, err, fault.UploadUnreadable)
	if ents, _ := os.ReadDir(target); len(ents) != 0 {
		t.Fatalf("made %v in the link's target", ents)
	}
	// A file where the store should be is no folder either, and is left as it is.
	file := filepath.Join(t.TempDir(), "store")
	os.WriteFile(file, []byte("x"), 0o600)
	for _, create := range []bool{true, false} {
		_, err = openStore(file, create)
		wantCode(t, err, fault.UploadUnreadable)
	}
	if b, _ := os.ReadFile(file); string(b) != "x" {
		t.Fatalf("the file became %q", b)
	}
}

// TestNotAStore: a folder that holds something else is refused with store.notStore by every
// operation, and nothing is written into it; an empty folder becomes a store at its first
// upload; a store of an earlier version (no mark) is recognised and marked on first upload.
func TestNotAStore(t *testing.T) {
	dir := outsideDir(t)
	before := snapshot(t, dir)
	_, err := openStore(dir, true)
	wantCode(t, err, fault.StoreNotStore)
	_, err = openStore(dir, false)
	wantCode(t, err, fault.StoreNotStore)
	sameSnapshot(t, "not a store", before, snapshot(t, dir))

	empty := t.TempDir()
	s, err := openStore(empty, false)
	wantCode(t, err, "")
	if l, err := s.list(); err != nil || len(l.Entries) != 0 {
		t.Fatalf("an empty folder: %v, %v", l, err)
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Fatalf("reading an empty folder made %v", ents)
	}
	s, err = openStore(empty, true)
	wantCode(t, err, "")
	if fi, err := os.Lstat(filepath.Join(empty, InternalDir, store.MarkName)); err != nil || fi.Mode() != FileMode {
		t.Fatalf("no mark after the first upload's open: %v %v", fi, err)
	}

	// An earlier version's store: .attachctl/partial and an upload, no mark.
	old := t.TempDir()
	os.MkdirAll(filepath.Join(old, InternalDir, partialDir), 0o700)
	os := localStore{Dir: old}
	id := putFinished(t, &os, "a.txt", []byte("a"), time.Now())
	s, err = openStore(old, false)
	wantCode(t, err, "")
	if _, err := s.ReadMeta(id); err != nil {
		t.Fatal(err)
	}
	if _, err := openStore(old, true); err != nil {
		t.Fatal(err)
	}
	if k, _ := s.judge(); k != store.Marked {
		t.Fatalf("an earlier version's store is %v after an upload's open, not marked", k)
	}
}

// TestSweepBindMount: a folder of another mount inside a stale upload is never entered: the
// sweep reports that upload failed (upload.unreadable) and the mounted files stay. Root only:
// mount --bind needs it.
func TestSweepBindMount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mount --bind needs root")
	}
	s := newStore(t)
	id := putFinished(t, s, "a.txt", []byte("a"), time.Now().Add(-48*time.Hour))
	keep := putFinished(t, s, "b.txt", []byte("b"), time.Now().Add(-48*time.Hour))
	outside := outsideDir(t)
	mnt := filepath.Join(s.UploadDir(id), "mnt")
	os.Mkdir(mnt, 0o700)
	if out, err := exec.Command("mount", "--bind", outside, mnt).CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mount --bind: %v: %s", err, out)
		}
		t.Skipf("mount --bind: %v: %s", err, out)
	}
	defer func() {
		// The upload may be in the trash by now: unmount wherever the mount went.
		exec.Command("umount", mnt).Run()
		exec.Command("umount", filepath.Join(s.Dir, InternalDir, trashDir, id, "mnt")).Run()
	}()
	before := snapshot(t, outside)
	got, failure := sweepEverything(t, s)
	if got[id] != store.Failed || got[keep] != store.Removed {
		t.Fatalf("outcomes %v: want %s failed and %s removed", got, id, keep)
	}
	wantCode(t, failure, fault.UploadUnreadable)
	if !strings.Contains(failure.Error(), "another file system") {
		t.Fatalf("failure %v does not say why", failure)
	}
	sameSnapshot(t, "bind mount", before, snapshot(t, outside))
}

// TestSweepGOGC: the sweep owns each descriptor once. Under a garbage collector that runs all
// the time (a finalizer closing a descriptor number that was reused shows then), sweeping a
// store of 300 uploads and 60 partials, 50 times, never fails.
func TestSweepGOGC(t *testing.T) {
	if testing.Short() {
		t.Skip("50 sweeps")
	}
	memoryTempDir(t)
	defer debugSetGCPercent(debugSetGCPercent(1))
	old := time.Now().Add(-48 * time.Hour)
	cut := time.Now().Add(-time.Hour)
	for run := 0; run < 50; run++ {
		s := newStore(t)
		for i := 0; i < 300; i++ {
			putFinished(t, s, "f.txt", []byte{byte(i)}, old)
		}
		for i := 0; i < 60; i++ {
			id, err := s.Begin(context.Background(), "p.bin", -1)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(s.Dir, InternalDir, partialDir, id)
			os.Chtimes(filepath.Join(p, "data"), old, old)
			os.Chtimes(p, old, old)
		}
		sw, err := s.sweep(0, false)
		if err != nil {
			t.Fatal(err)
		}
		l, err := s.list()
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Entries) != 360 || len(l.Skipped) != 0 {
			t.Fatalf("run %d: listed %d, skipped %v", run, len(l.Entries), l.Skipped)
		}
		removed := 0
		err = sw.Remove(context.Background(), l.Entries, func(e store.Entry) bool { return e.LastUsed.Before(cut) && (!e.Finished || e.Made.Before(cut)) },
			func(e store.Entry, o store.Outcome, err error) error {
				if o != store.Removed {
					t.Errorf("run %d: %s: outcome %v, %v", run, e.ID, o, err)
				}
				removed++
				return nil
			})
		if cerr := sw.Close(); err == nil {
			err = cerr
		}
		if err != nil || removed != 360 {
			t.Fatalf("run %d: %v, removed %d", run, err, removed)
		}
		if l, err := s.list(); err != nil || len(l.Entries) != 0 {
			t.Fatalf("run %d: left %v, %v", run, l, err)
		}
		if ents, _ := os.ReadDir(filepath.Join(s.Dir, InternalDir, trashDir)); len(ents) != 0 {
			t.Fatalf("run %d: trash holds %d", run, len(ents))
		}
	}
}

// TestReuploadWritesNothing: uploading a file that is already a finished upload (same BLAKE3 and
// name) reads it once, writes nothing into the store, and marks the upload used, so that a sweep
// keeps the upload the user was just handed.
func TestReuploadWritesNothing(t *testing.T) {
	s := newStore(t)
	src := filepath.Join(t.TempDir(), "big.bin")
	size := int64(1 << 30)
	if testing.Short() {
		size = 1 << 20
	}
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse but for a head and a tail: quick to make, all of it read and hashed.
	f.WriteAt(bytes.Repeat([]byte("head"), 1024), 0)
	f.WriteAt([]byte("tail"), size-4)
	f.Close()
	rec := &manifest.Record{Path: src}
	if err := s.UploadRecord(context.Background(), rec, UploadOptions{}); err != nil {
		t.Fatal(err)
	}
	id := rec.Upload.ID
	made := time.Now().Add(-48 * time.Hour)
	if err := s.MarkUsed(context.Background(), []string{id}, made); err != nil {
		t.Fatal(err)
	}
	usage := func() int64 {
		var total int64
		filepath.WalkDir(s.Dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if fi, err := os.Lstat(p); err == nil {
					total += fi.Size()
				}
			}
			return nil
		})
		return total + diskBlocks(t, s.Dir)
	}
	before := usage()
	// What the re-uploads write is seen in the store's folders and the source's, not counted over
	// the process (watch_linux_test.go says why): the process is busy elsewhere meanwhile, as it
	// may be in any run, and none of that is the store's.
	watch := watchWrites(t, s.Dir, filepath.Dir(src))
	stop := busyElsewhere(t)
	defer stop()
	again := &manifest.Record{Path: src, Blake3: rec.Blake3, Name: rec.Name}
	start := time.Now()
	if err := s.UploadRecord(context.Background(), again, UploadOptions{}); err != nil {
		t.Fatal(err)
	}
	if again.Upload == nil || again.Upload.ID != id {
		t.Fatalf("uploaded again as %+v, want %s", again.Upload, id)
	}
	if after := usage(); after != before {
		t.Fatalf("store usage %d bytes before, %d after: something was written", before, after)
	}
	last, used, err := s.LastUsed(id)
	if err != nil || !used || last.Before(start.Add(-time.Second)) {
		t.Fatalf("last used %v (%v, %v): not moved by the re-upload", last, used, err)
	}
	// Without a BLAKE3 in the record (sniff --no-hash) the file is read once to hash it, and
	// still nothing is written.
	again = &manifest.Record{Path: src}
	if err := s.UploadRecord(context.Background(), again, UploadOptions{}); err != nil {
		t.Fatal(err)
	}
	if again.Upload.ID != id {
		t.Fatalf("uploaded again without a hash as %s, want %s", again.Upload.ID, id)
	}
	if after := usage(); after != before {
		t.Fatalf("store usage %d bytes before, %d after a re-upload without a hash", before, after)
	}
	if l, _ := s.list(); len(l.Entries) != 1 {
		t.Fatalf("the store holds %d uploads, want 1", len(l.Entries))
	}
	// And no byte was written to a file of the store or to the source meanwhile: the only entries
	// made are the markers, each an empty file made under a name of its own and renamed to .used.
	marked := 0
	for _, c := range watch.changes(t) {
		name := filepath.Base(c.path)
		switch {
		case c.wrote():
			t.Errorf("the re-uploads wrote to %s", c.path)
		case c.made() && name == UsedName:
			marked++
		case c.made() && !strings.HasPrefix(name, store.TempPrefix(UsedName)):
			t.Errorf("the re-uploads made %s", c.path)
		}
	}
	if marked != 2 { // and the watch saw what was done: each re-upload renamed a new marker in
		t.Errorf("%d markers renamed to %s, want one for each re-upload", marked, UsedName)
	}
}

var debugSetGCPercent = debug.SetGCPercent

// memoryTempDir makes the test's temporary folders on a memory file system where there is a
// writable one. Filling and sweeping a store over and over is file creations and removals by the
// thousand, and on a disk file system the kernel's time for them was most of the package's
// CPU; what a test that calls this checks (who owns which descriptor) does not depend on the
// file system.
func memoryTempDir(t *testing.T) {
	d, err := os.MkdirTemp("/dev/shm", "attachctl-test")
	if err != nil {
		return
	}
	os.Remove(d)
	t.Setenv("TMPDIR", "/dev/shm")
}

// busyElsewhere keeps the process doing, until stop is called, what any process may do beside
// the store's calls: another goroutine sleeps briefly, again and again (the runtime may then wake
// its poller, writing 8 bytes to its eventfd), and writes a line to a file outside the store.
func busyElsewhere(t *testing.T) (stop func()) {
	f, err := os.Create(filepath.Join(t.TempDir(), "elsewhere.log"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		f.Write(make([]byte, 8<<10))
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Microsecond):
			}
			f.WriteString("a line from another goroutine\n")
		}
	})
	return func() {
		close(done)
		wg.Wait()
		f.Close()
	}
}

// diskBlocks is what the files under dir take on disk, from their block counts.
func diskBlocks(t *testing.T, dir string) int64 {
	var total int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		var st unix.Stat_t
		if err == nil && unix.Lstat(p, &st) == nil {
			total += st.Blocks * 512
		}
		return nil
	})
	return total
}

// TestSweepPartialFinishedSinceListed: a partial the sweep listed and that was finished before
// the sweep re-checked it is gone, not removed: its leftover info.json is never reported as a
// removed partial.
func TestSweepPartialFinishedSinceListed(t *testing.T) {
	s := newStore(t)
	id, err := s.Begin(context.Background(), "a.txt", 1)
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.list()
	if err != nil || len(l.Entries) != 1 || l.Entries[0].Finished {
		t.Fatalf("listed %v, %v", l, err)
	}
	if _, err := s.Chunk(id, 0, strings.NewReader("a"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Finish(context.Background(), id, 1, ""); err != nil {
		t.Fatal(err)
	}
	// What a kill right after the publishing rename leaves.
	p := filepath.Join(s.Dir, InternalDir, partialDir, id)
	os.Mkdir(p, DirMode)
	os.WriteFile(filepath.Join(p, partialInfo), []byte(`{"name":"a.txt","size":1,"created":"2020-01-01T00:00:00Z"}`), FileMode)
	sw, err := s.sweep(0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	var got []store.Outcome
	err = sw.Remove(context.Background(), l.Entries, func(store.Entry) bool { return true }, func(e store.Entry, o store.Outcome, err error) error {
		got = append(got, o)
		return nil
	})
	if err != nil || len(got) != 1 || got[0] != store.Gone {
		t.Fatalf("outcomes %v, %v: want gone", got, err)
	}
	if _, err := s.ReadMeta(id); err != nil {
		t.Fatalf("the finished upload: %v", err)
	}
}

// sweepEverything runs one sweep of s that takes every entry it lists, and gives each entry's
// outcome and the error of the last that failed.
func sweepEverything(t *testing.T, s *localStore) (map[string]store.Outcome, error) {
	t.Helper()
	sw, err := s.sweep(0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	l, err := s.list()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]store.Outcome{}
	var failure error
	err = sw.Remove(context.Background(), l.Entries, func(store.Entry) bool { return true }, func(e store.Entry, o store.Outcome, err error) error {
		got[e.ID] = o
		if o == store.Failed {
			failure = err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, failure
}

// TestLockPartialPlantedNoWait: a data file planted in a partial by another user, and held locked
// by it, is refused at once (upload.unreadable): the lock of a file that is not ours is never
// waited for, so a planted file cannot keep an upload waiting.
func TestLockPartialPlantedNoWait(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the file to another user")
	}
	s := newStore(t)
	id, err := s.Begin(context.Background(), "a.txt", -1)
	must(t, err)
	data := filepath.Join(s.partialDir(id), partialData)
	must(t, os.Chown(data, 65534, 65534))
	f, err := os.OpenFile(data, os.O_RDWR, 0)
	must(t, err)
	defer f.Close()
	must(t, unix.Flock(int(f.Fd()), unix.LOCK_EX)) // the planter holds it
	done := make(chan error, 1)
	go func() {
		p, err := s.lockPartial(id, false)
		if p != nil {
			p.close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		wantCode(t, err, fault.UploadUnreadable)
	case <-time.After(5 * time.Second):
		f.Close() // lets the waiter go
		<-done
		t.Fatal("waited for the lock of a file another user owns")
	}
}
