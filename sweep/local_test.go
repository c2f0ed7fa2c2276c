//go:build unix

package sweep

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/open"
	"github.com/zeebo/blake3"
	"golang.org/x/sys/unix"
)

// mkFinished lays out a finished upload as ops' package doc says (0700/0600), made at made.
func mkFinished(t testing.TB, s *localStore, name string, data []byte, made time.Time) string {
	t.Helper()
	id, err := store.NewID()
	if err != nil {
		t.Fatal(err)
	}
	dir := s.UploadDir(id)
	if err := os.Mkdir(dir, open.DirMode); err != nil {
		t.Fatal(err)
	}
	sum := blake3.Sum256(data)
	b, _ := json.Marshal(store.Info{ID: id, Name: name, Size: int64(len(data)), Blake3: hexOf(sum[:]), Made: made.UTC()})
	if err := os.WriteFile(filepath.Join(dir, name), data, open.FileMode); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, store.MetaName), b, open.FileMode); err != nil {
		t.Fatal(err)
	}
	return id
}

// mkPartial lays out an unfinished upload whose data was last written at written.
func mkPartial(t testing.TB, s *localStore, name string, data []byte, written time.Time) string {
	t.Helper()
	id, _ := store.NewID()
	dir := filepath.Join(s.Dir, internalDir, partialDir, id)
	if err := os.MkdirAll(dir, open.DirMode); err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]any{"name": name, "size": -1, "created": written.UTC()})
	os.WriteFile(filepath.Join(dir, "info.json"), info, open.FileMode)
	os.WriteFile(filepath.Join(dir, "data"), data, open.FileMode)
	os.Chtimes(filepath.Join(dir, "data"), written, written)
	return id
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// The names of a folder store's internal folders as docs/store.md lays them out: the tests that
// build or inspect partials and the trash look at the layout the docs promise, which the store's
// own package keeps internal.
const (
	internalDir = ".attachctl"
	partialDir  = "partial"
	trashDir    = "trash"
)

// newStore is a new local store, opened as the command opens one (ops/store/open) and made as
// `attachctl store init` makes it.
func newStore(t testing.TB) *localStore {
	t.Helper()
	s, err := openStore(t.TempDir())
	if err == nil {
		err = s.b.Features().Limiter.SetLimits(context.Background(), store.Limits{})
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// localStore is a local store and its folder, for the tests that lay out or look at what is on
// disk.
type localStore struct {
	b   store.Backend
	Dir string
}

// openStore opens the local store at dir, as the command does.
func openStore(dir string) (*localStore, error) {
	b, err := open.Store(context.Background(), dir, open.Options{})
	if err != nil {
		return nil, err
	}
	return &localStore{b: b, Dir: dir}, nil
}

// Backend is the store as the command hands it to Run.
func (s *localStore) Backend() store.Backend { return s.b }

// UploadDir is the folder of a finished upload.
func (s *localStore) UploadDir(id string) string { return filepath.Join(s.Dir, id) }

func run(t *testing.T, s *localStore, opts Options) (Summary, []Removed) {
	t.Helper()
	var got []Removed
	sum, err := Run(context.Background(), s.Backend(), opts, func(r Removed) error { got = append(got, r); return nil })
	if err != nil {
		t.Fatalf("sweep: %v", err)
	}
	return sum, got
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// TestSweepKeepsAPartialBeingWritten: the local store tells a partial being written by the lock
// its writer holds on its data (the policy's own cases run on the in-memory store).
func TestSweepKeepsAPartialBeingWritten(t *testing.T) {
	s := newStore(t)
	old := time.Now().Add(-48 * time.Hour)
	id := mkPartial(t, s, "p.bin", []byte("partial"), old)
	dir := filepath.Join(s.Dir, internalDir, partialDir, id)
	f, err := os.Open(filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	sum, got := run(t, s, Options{Before: time.Now()})
	if len(got) != 0 || sum.Kept != 1 || !exists(dir) {
		t.Fatalf("lines %+v, summary %+v: want the partial being written kept", got, sum)
	}
	f.Close() // the writer is gone: stale now
	sum, got = run(t, s, Options{Before: time.Now()})
	if len(got) != 1 || got[0].ID != id || exists(dir) {
		t.Fatalf("lines %+v, summary %+v: want the partial removed once its writer is gone", got, sum)
	}
}

func TestSweepEmptiesLeftoverTrash(t *testing.T) {
	s := newStore(t)
	trash := filepath.Join(s.Dir, internalDir, trashDir)
	os.MkdirAll(filepath.Join(trash, "x", "y"), 0o700)
	os.WriteFile(filepath.Join(trash, "x", "y", "z"), []byte("z"), 0o600)
	sum, got := run(t, s, Options{Before: time.Now()})
	if ents, _ := os.ReadDir(trash); len(ents) != 0 || len(got) != 0 || len(sum.Failed) != 0 {
		t.Fatalf("trash %v, lines %v, summary %+v", ents, got, sum)
	}
}

// TestSweepHostileStore: an upload folder that is a symlink to a folder outside, a symlink inside
// an upload pointing outside, a stray file at the top. A sweep with a cutoff in the future
// removes nothing outside, keeps the stray file and reports what it skipped.
func TestSweepHostileStore(t *testing.T) {
	s := newStore(t)
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	os.MkdirAll(filepath.Join(victim, "sub"), 0o700)
	os.WriteFile(filepath.Join(victim, "keep.txt"), []byte("keep"), 0o600)
	os.WriteFile(filepath.Join(victim, "sub", "deep.txt"), []byte("deep"), 0o600)
	// A folder that looks like a finished upload, outside, and a link to it with an id's name.
	fake := filepath.Join(outside, "fake")
	os.Mkdir(fake, 0o700)
	os.WriteFile(filepath.Join(fake, "f.txt"), []byte("f"), 0o600)
	linkID, _ := store.NewID()
	meta, _ := json.Marshal(store.Info{ID: linkID, Name: "f.txt", Size: 1, Made: time.Now().Add(-time.Hour)})
	os.WriteFile(filepath.Join(fake, store.MetaName), meta, 0o600)
	os.Symlink(fake, s.UploadDir(linkID))
	// A real stale upload with links inside pointing outside.
	id := mkFinished(t, s, "a.txt", []byte("a"), time.Now().Add(-time.Hour))
	os.Symlink(victim, filepath.Join(s.UploadDir(id), "evil-dir"))
	os.Symlink(filepath.Join(victim, "keep.txt"), filepath.Join(s.UploadDir(id), "evil-file"))
	// An unfinished upload whose data is a link outside.
	pid, _ := store.NewID()
	pdir := filepath.Join(s.Dir, internalDir, partialDir, pid)
	os.Mkdir(pdir, 0o700)
	os.Symlink(filepath.Join(victim, "keep.txt"), filepath.Join(pdir, "data"))
	// Strays: a file, a link to a file outside, a folder that is not an id, an id folder without meta.
	os.WriteFile(filepath.Join(s.Dir, "stray.txt"), []byte("stray"), 0o600)
	os.Symlink(filepath.Join(victim, "keep.txt"), filepath.Join(s.Dir, "link.txt"))
	os.Mkdir(filepath.Join(s.Dir, "notes"), 0o700)
	noMeta, _ := store.NewID()
	os.Mkdir(s.UploadDir(noMeta), 0o700)
	// The trash itself holds a link to the outside, as a crashed or hostile sweep might leave.
	trash := filepath.Join(s.Dir, internalDir, trashDir)
	os.MkdirAll(trash, 0o700)
	os.Symlink(victim, filepath.Join(trash, "old"))

	sum, got := run(t, s, Options{Before: time.Now().Add(24 * time.Hour)})

	for _, p := range []string{filepath.Join(victim, "keep.txt"), filepath.Join(victim, "sub", "deep.txt"),
		filepath.Join(fake, "f.txt"), filepath.Join(fake, store.MetaName)} {
		if !exists(p) {
			t.Fatalf("%s outside the store was removed", p)
		}
	}
	for _, p := range []string{"stray.txt", "link.txt", "notes", linkID, noMeta} {
		if !exists(filepath.Join(s.Dir, p)) {
			t.Fatalf("%s was removed; it is not an upload", p)
		}
	}
	if len(got) != 1 || got[0].ID != id || exists(s.UploadDir(id)) {
		t.Fatalf("removed %+v; want just %s", got, id)
	}
	var skipped []string
	for _, sk := range sum.Skipped {
		skipped = append(skipped, filepath.Base(sk.Path))
	}
	sort.Strings(skipped)
	want := []string{pid, linkID, noMeta, "link.txt", "notes", "stray.txt"}
	sort.Strings(want)
	if strings.Join(skipped, " ") != strings.Join(want, " ") {
		t.Fatalf("skipped %v, want %v (summary %+v)", skipped, want, sum)
	}
}

// TestSweepLeftoverAfterPublish: a finish killed right after its publishing rename leaves the
// partial's info.json beside the finished upload of the same id. That is not an upload: the sweep
// neither keeps it as one nor reports it removed, and it is cleaned away.
func TestSweepLeftoverAfterPublish(t *testing.T) {
	s := newStore(t)
	old := time.Now().Add(-48 * time.Hour)
	id := mkFinished(t, s, "f.txt", []byte("finished"), old)
	dir := filepath.Join(s.Dir, internalDir, partialDir, id)
	if err := os.MkdirAll(dir, open.DirMode); err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]any{"name": "f.txt", "size": 8, "created": old.UTC()})
	os.WriteFile(filepath.Join(dir, "info.json"), info, open.FileMode)
	os.Chtimes(dir, old, old)
	sum, got := run(t, s, Options{Before: time.Now().Add(-time.Hour), DryRun: true})
	if len(got) != 1 || !got[0].Finished || sum.Removed != 1 {
		t.Fatalf("dry run: lines %+v, summary %+v: want only the finished upload", got, sum)
	}
	sum, got = run(t, s, Options{Before: time.Now().Add(-time.Hour)})
	if len(got) != 1 || !got[0].Finished || got[0].ID != id || len(sum.Skipped) != 0 {
		t.Fatalf("lines %+v, summary %+v: want only the finished upload removed", got, sum)
	}
	if exists(dir) {
		t.Fatalf("the leftover %s is still there", dir)
	}
}
