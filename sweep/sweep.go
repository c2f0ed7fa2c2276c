// Package sweep is the sweep policy over a store: remove the finished uploads made and last used
// before a cutoff, and the unfinished ones last written before it, under ops' lock protocol.
//
// A sweep holds STORE/.attachctl/sweep.lock for its whole run (one sweep at a time). It first
// removes what a crashed sweep left in STORE/.attachctl/trash, then scans the store without the
// marker lock. Then, batch by batch, it takes the marker lock exclusive, re-checks each candidate
// (a finished upload's .used marker, an unfinished upload's data file and its writer's flock),
// renames the doomed folders into the trash in one rename each, and releases the lock; the trash
// is emptied outside the lock. So a use waits for one batch at most, and a use that comes after a
// rename finds the upload missing rather than writing into a doomed folder.
//
// Nothing is followed: entries are judged by lstat and getdents' type, opened O_NOFOLLOW, renamed
// (which moves a link, never its target) and removed by a walk on folder descriptors. Entries the
// sweep does not recognise (stray files, links, folders whose name is not an id or that have no
// valid metadata) are left in place and reported as skipped.
package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops"
	"golang.org/x/sys/unix"
)

// Options of one sweep.
type Options struct {
	Before time.Time     // the cutoff: made and last used (or last written) strictly before it
	DryRun bool          // report what would be removed, remove nothing
	Wait   time.Duration // how long to wait for another sweep to end (sweep.lock)
	Batch  int           // candidates decided per hold of the marker lock; default 256
	// MarkerWait is how long one batch waits for the marker lock, which uses hold only briefly;
	// default the larger of Wait and ops.MarkerWait.
	MarkerWait time.Duration
}

// Removed is one upload removed (or that would be, in a dry run): one JSON line on output.
// Times are RFC 3339 in UTC; lastUsed is null for an upload never used. For an unfinished upload,
// size is the bytes written so far, made is when it was begun, and lastUsed when it was last
// written.
type Removed struct {
	ID       string  `json:"id"`
	Name     string  `json:"name"`
	Size     int64   `json:"size"`
	Finished bool    `json:"finished"`
	Made     *string `json:"made"`
	LastUsed *string `json:"lastUsed"`
}

// Skip is an entry the sweep left because it does not recognise it.
type Skip struct {
	Path string
	Why  string
}

// Summary is what a sweep did.
type Summary struct {
	Removed int     // uploads removed (or that would be)
	Bytes   int64   // their bytes
	Kept    int     // uploads kept: used, made or written since the cutoff, or being written
	Skipped []Skip  // entries not recognised, left in place
	Failed  []error // removals that failed
}

// candidate is an upload the scan found stale.
type candidate struct {
	name     string // entry name in its folder: the id
	finished bool
	rm       Removed
	usedAt   time.Time // finished: the marker's mtime at scan, zero if none
}

// Run sweeps store s. It returns store.locked when another sweep holds the store past opts.Wait,
// or when the marker lock cannot be had; failed removals are in the summary, and emit is called
// once per upload removed, in id order within each batch. An error from emit stops the sweep.
func Run(s *ops.Store, opts Options, emit func(Removed) error) (Summary, error) {
	var sum Summary
	if opts.Batch <= 0 {
		opts.Batch = 256
	}
	if opts.MarkerWait <= 0 {
		opts.MarkerWait = max(opts.Wait, ops.MarkerWait)
	}
	storefd, err := s.OpenStoreDir()
	if err != nil {
		return sum, err
	}
	defer unix.Close(storefd)
	sl, err := s.LockSweep(opts.Wait)
	if err != nil {
		return sum, err
	}
	defer sl.Unlock()

	var trashfd int = -1
	if !opts.DryRun {
		if trashfd, err = s.OpenInternalDir(ops.TrashDir); err != nil {
			return sum, err
		}
		defer unix.Close(trashfd)
		emptyTrash(trashfd, s, &sum)
	}
	cands, err := scan(s, storefd, opts.Before, &sum)
	if err != nil {
		return sum, err
	}
	partfd, perr := s.OpenInternalDir(ops.PartialDir)
	if perr == nil {
		defer unix.Close(partfd)
		pc := scanPartial(s, partfd, opts.Before, &sum)
		cands = append(cands, pc...)
	} else {
		sum.Failed = append(sum.Failed, perr)
	}
	if opts.DryRun {
		for i := range cands {
			c := &cands[i]
			if !c.finished && !recheckPartial(s, partfd, -1, c, opts.Before, &sum) {
				continue
			}
			sum.Removed++
			sum.Bytes += c.rm.Size
			if err := emit(c.rm); err != nil {
				return sum, err
			}
		}
		return sum, nil
	}
	for len(cands) > 0 {
		n := min(opts.Batch, len(cands))
		batch := cands[:n]
		cands = cands[n:]
		doomed, err := decide(s, storefd, partfd, trashfd, batch, opts, &sum)
		if err != nil {
			return sum, err
		}
		removeDoomed(s, trashfd, doomed, opts.Before, &sum)
		for _, c := range doomed {
			if c.rm.ID == "" { // its removal failed
				continue
			}
			sum.Removed++
			sum.Bytes += c.rm.Size
			if err := emit(c.rm); err != nil {
				return sum, err
			}
		}
	}
	return sum, nil
}

// stamp formats a time for a Removed line.
func stamp(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}

// workers is how many entries are judged or removed at once: the work is system calls.
func workers() int { return max(4, 4*runtime.NumCPU()) }

// parallel runs f(i) for i in [0, n) on workers goroutines.
func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int, 64)
	for w := 0; w < min(workers(), n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

// readDir lists the folder open as fd with each entry's type from getdents (no stat, no follow).
func readDir(fd int, path string) ([]os.DirEntry, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	d := os.NewFile(uintptr(dup), path)
	defer d.Close()
	if _, err := d.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	ents, err := d.ReadDir(-1)
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	return ents, err
}

// scan judges every entry at the top of the store, without the marker lock.
func scan(s *ops.Store, storefd int, before time.Time, sum *Summary) ([]candidate, error) {
	ents, err := readDir(storefd, s.Dir)
	if err != nil {
		return nil, manifest.Errorf(manifest.UploadUnreadable, "store %s: %v", s.Dir, err)
	}
	type judged struct {
		c    *candidate
		kept bool
		skip *Skip
	}
	out := make([]judged, len(ents))
	parallel(len(ents), func(i int) {
		e := ents[i]
		name := e.Name()
		path := s.Dir + "/" + name
		switch {
		case name == ops.InternalDir && e.IsDir():
			return
		case ops.ValidID(name) != nil:
			out[i].skip = &Skip{path, "not an upload id"}
			return
		case e.Type()&os.ModeSymlink != 0:
			out[i].skip = &Skip{path, "a symlink"}
			return
		case !e.IsDir():
			out[i].skip = &Skip{path, "not a folder"}
			return
		}
		meta, used, wasUsed, err := s.UploadState(name)
		if err != nil {
			out[i].skip = &Skip{path, "not a finished upload: " + err.Error()}
			return
		}
		if !meta.Made.Before(before) || (wasUsed && !used.Before(before)) {
			out[i].kept = true
			return
		}
		c := &candidate{name: name, finished: true, rm: Removed{
			ID: name, Name: meta.Name, Size: meta.Size, Finished: true, Made: stamp(meta.Made),
		}}
		if wasUsed {
			c.usedAt = used
			c.rm.LastUsed = stamp(used)
		}
		out[i].c = c
	})
	var cands []candidate
	for _, j := range out {
		switch {
		case j.c != nil:
			cands = append(cands, *j.c)
		case j.kept:
			sum.Kept++
		case j.skip != nil:
			sum.Skipped = append(sum.Skipped, *j.skip)
		}
	}
	return cands, nil
}

// Names in an unfinished upload's folder, as ops' upload writes them.
const (
	partialData = "data"
	partialInfo = "info.json"
	partialOut  = "out"
)

// partialState reads an unfinished upload's name and begin time (info.json, best effort) and
// opens the file its writer locks: data, or out/<name> while a finish is moving it.
func partialState(dirfd int) (name string, made time.Time, fd int, err error) {
	if f, err := unix.Openat(dirfd, partialInfo, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
		var info struct {
			Name    string    `json:"name"`
			Created time.Time `json:"created"`
		}
		b, _ := io.ReadAll(io.LimitReader(os.NewFile(uintptr(f), partialInfo), 1<<20))
		unix.Close(f)
		if json.Unmarshal(b, &info) == nil && ops.ValidName(info.Name) == nil {
			name, made = info.Name, info.Created
		}
	}
	const flags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	fd, err = unix.Openat(dirfd, partialData, flags, 0)
	if errors.Is(err, unix.ENOENT) && name != "" {
		if out, oerr := unix.Openat(dirfd, partialOut, flags|unix.O_DIRECTORY, 0); oerr == nil {
			fd, err = unix.Openat(out, name, flags, 0)
			unix.Close(out)
		}
	}
	return name, made, fd, err
}

// judgePartial stats an unfinished upload: its data's size and mtime, or the folder's mtime when
// it has no data file. fd is -1 when there is no data file.
func judgePartial(dirfd int) (name string, made, written time.Time, size int64, fd int, err error) {
	name, made, fd, err = partialState(dirfd)
	var st unix.Stat_t
	if err == nil {
		if err = unix.Fstat(fd, &st); err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG {
			err = fmt.Errorf("data is not a regular file")
		}
		if err != nil {
			unix.Close(fd)
			return name, made, written, 0, -1, err
		}
		return name, made, time.Unix(st.Mtim.Unix()), st.Size, fd, nil
	}
	if !errors.Is(err, unix.ENOENT) {
		return name, made, written, 0, -1, err
	}
	if err = unix.Fstat(dirfd, &st); err != nil {
		return name, made, written, 0, -1, err
	}
	return name, made, time.Unix(st.Mtim.Unix()), 0, -1, nil
}

// scanPartial judges every unfinished upload, without the marker lock.
func scanPartial(s *ops.Store, partfd int, before time.Time, sum *Summary) []candidate {
	dir := s.Dir + "/" + ops.InternalDir + "/" + ops.PartialDir
	ents, err := readDir(partfd, dir)
	if err != nil {
		sum.Failed = append(sum.Failed, manifest.Errorf(manifest.UploadUnreadable, "%s: %v", dir, err))
		return nil
	}
	var cands []candidate
	for _, e := range ents {
		path := dir + "/" + e.Name()
		if ops.ValidID(e.Name()) != nil || !e.IsDir() || e.Type()&os.ModeSymlink != 0 {
			sum.Skipped = append(sum.Skipped, Skip{path, "not an unfinished upload"})
			continue
		}
		dirfd, err := unix.Openat(partfd, e.Name(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			sum.Skipped = append(sum.Skipped, Skip{path, err.Error()})
			continue
		}
		name, made, written, size, fd, err := judgePartial(dirfd)
		unix.Close(dirfd)
		if fd >= 0 {
			unix.Close(fd)
		}
		if err != nil {
			sum.Skipped = append(sum.Skipped, Skip{path, "unfinished upload: " + err.Error()})
			continue
		}
		if !written.Before(before) {
			sum.Kept++
			continue
		}
		cands = append(cands, candidate{name: e.Name(), rm: Removed{
			ID: e.Name(), Name: name, Size: size, Made: stamp(made), LastUsed: stamp(written),
		}})
	}
	return cands
}

// trashName is a candidate's name in the trash.
func trashName(c *candidate) string {
	if c.finished {
		return c.name
	}
	return "partial-" + c.name
}

// decide takes the marker lock exclusive, re-checks each candidate of batch and renames the
// doomed ones into the trash, and releases the lock. It returns the doomed candidates.
func decide(s *ops.Store, storefd, partfd, trashfd int, batch []candidate, opts Options, sum *Summary) ([]candidate, error) {
	lk, err := s.LockExclusive(opts.MarkerWait)
	if err != nil {
		return nil, err
	}
	defer lk.Unlock()
	var doomed []candidate
	for i := range batch {
		c := &batch[i]
		var ok bool
		if c.finished {
			ok = recheckFinished(s, storefd, trashfd, c, opts.Before, sum)
		} else {
			ok = recheckPartial(s, partfd, trashfd, c, opts.Before, sum)
		}
		if ok {
			doomed = append(doomed, *c)
		}
	}
	return doomed, nil
}

// recheckFinished re-reads a finished candidate's marker under the lock and, when it is still
// stale, renames its folder into the trash.
func recheckFinished(s *ops.Store, storefd, trashfd int, c *candidate, before time.Time, sum *Summary) bool {
	path := s.UploadDir(c.name)
	dirfd, err := unix.Openat(storefd, c.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if !errors.Is(err, unix.ENOENT) { // gone meanwhile (an abort, another tool): nothing to do
			sum.Skipped = append(sum.Skipped, Skip{path, "changed during the sweep: " + err.Error()})
		}
		return false
	}
	used, wasUsed, err := ops.LastUsedAt(dirfd, path+"/"+ops.UsedName)
	unix.Close(dirfd)
	if err != nil {
		sum.Skipped = append(sum.Skipped, Skip{path, err.Error()})
		return false
	}
	if wasUsed && !used.Before(before) {
		sum.Kept++
		return false
	}
	if err := unix.Renameat2(storefd, c.name, trashfd, trashName(c), unix.RENAME_NOREPLACE); err != nil {
		sum.Failed = append(sum.Failed, fmt.Errorf("%s: moving into the trash: %w", path, err))
		return false
	}
	return true
}

// recheckPartial takes the writer's lock on an unfinished candidate without waiting (a held lock
// means it is being written: kept), re-reads when it was last written and, when it is still
// stale, renames its folder into the trash while holding the writer's lock. A trashfd of -1 is a
// dry run: nothing is renamed.
func recheckPartial(s *ops.Store, partfd, trashfd int, c *candidate, before time.Time, sum *Summary) bool {
	path := s.Dir + "/" + ops.InternalDir + "/" + ops.PartialDir + "/" + c.name
	dirfd, err := unix.Openat(partfd, c.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false // finished, aborted or swept meanwhile
	}
	defer unix.Close(dirfd)
	_, _, written, size, fd, err := judgePartial(dirfd)
	if err != nil {
		return false
	}
	if fd >= 0 {
		defer unix.Close(fd) // releases the writer's lock we take below
		got, err := ops.TryFlock(fd)
		if err != nil || !got {
			sum.Kept++
			return false
		}
		// Taken: read again, the holder before us may have written.
		_, _, written, size, _, err = judgePartial(dirfd)
		if err != nil {
			return false
		}
	}
	if !written.Before(before) {
		sum.Kept++
		return false
	}
	c.rm.Size, c.rm.LastUsed = size, stamp(written)
	if trashfd < 0 { // a dry run
		return true
	}
	if err := unix.Renameat2(partfd, c.name, trashfd, trashName(c), unix.RENAME_NOREPLACE); err != nil {
		sum.Failed = append(sum.Failed, fmt.Errorf("%s: moving into the trash: %w", path, err))
		return false
	}
	return true
}

// removeDoomed removes the doomed folders from the trash, outside the marker lock. For a finished
// upload it reads the marker once more first, so that the line reports the last use the folder
// really carried. A candidate whose removal failed gets an empty ID.
func removeDoomed(s *ops.Store, trashfd int, doomed []candidate, before time.Time, sum *Summary) {
	trash := s.Dir + "/" + ops.InternalDir + "/" + ops.TrashDir
	errs := make([]error, len(doomed))
	parallel(len(doomed), func(i int) {
		c := &doomed[i]
		name := trashName(c)
		if c.finished {
			if dirfd, err := unix.Openat(trashfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
				if used, ok, err := ops.LastUsedAt(dirfd, trash+"/"+name+"/"+ops.UsedName); err == nil && ok {
					c.rm.LastUsed = stamp(used)
				}
				unix.Close(dirfd)
			}
		}
		if err := RemoveAt(trashfd, name); err != nil {
			errs[i] = fmt.Errorf("%s/%s: removing upload %s: %w", trash, name, c.name, err)
			c.rm.ID = ""
		}
	})
	for _, err := range errs {
		if err != nil {
			sum.Failed = append(sum.Failed, err)
		}
	}
}

// emptyTrash removes what a crashed sweep left in the trash.
func emptyTrash(trashfd int, s *ops.Store, sum *Summary) {
	trash := s.Dir + "/" + ops.InternalDir + "/" + ops.TrashDir
	ents, err := readDir(trashfd, trash)
	if err != nil {
		sum.Failed = append(sum.Failed, fmt.Errorf("%s: %w", trash, err))
		return
	}
	for _, e := range ents {
		if err := RemoveAt(trashfd, e.Name()); err != nil {
			sum.Failed = append(sum.Failed, fmt.Errorf("%s/%s: %w", trash, e.Name(), err))
		}
	}
}
