//go:build unix

package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// metaFiles lists STORE/.attachctl/meta.
func metaFiles(t *testing.T, s *localStore) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(s.internal(metaDir), "*"))
	return m
}

// commitSmall uploads n small new files (their bytes from seed) through one batch of s
// (staged: each file is one chunk) and commits it; it returns the records.
func commitSmall(t *testing.T, s *localStore, n int, seed uint64) []*manifest.Record {
	t.Helper()
	dir := t.TempDir()
	recs := make([]*manifest.Record, n)
	for i := range recs {
		path := filepath.Join(dir, fmt.Sprintf("f%d.bin", i))
		recs[i] = recordFor(path, writeRandom(t, path, 100+i, seed*1000+uint64(i)))
	}
	b := s.newBatch()
	buildAll(t, b, recs, 0)
	must(t, b.Commit())
	return recs
}

// Small uploads of a batch: each folder holds its file only; the metadata is one owner-only,
// read-only file for the commit, placed with the uploads, and read by every reader (a fresh
// Store, as another process, too). What is wrong with that file makes its uploads unreadable or
// not finished, never someone else's metadata.
func TestBatchMetaIndex(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, s *localStore, file string, recs []*manifest.Record)
		code   fault.Code // of ReadMeta for every upload of the commit, through a fresh Store
	}{
		{"whole", func(*testing.T, *localStore, string, []*manifest.Record) {}, ""},
		{"removed", func(t *testing.T, s *localStore, file string, _ []*manifest.Record) {
			must(t, os.Remove(file))
		}, fault.UploadMissing},
		{"a symlink to a copy", func(t *testing.T, s *localStore, file string, _ []*manifest.Record) {
			b, _ := os.ReadFile(file)
			cp := filepath.Join(t.TempDir(), "copy")
			must(t, os.WriteFile(cp, b, 0o400))
			must(t, os.Remove(file))
			must(t, os.Symlink(cp, file))
		}, fault.UploadMissing},
		{"a second hard link", func(t *testing.T, s *localStore, file string, _ []*manifest.Record) {
			must(t, os.Link(file, filepath.Join(t.TempDir(), "other")))
		}, fault.UploadMissing},
		{"readable by others", func(t *testing.T, s *localStore, file string, _ []*manifest.Record) {
			must(t, os.Chmod(file, 0o444))
		}, fault.UploadMissing},
		{"a damaged line", func(t *testing.T, s *localStore, file string, _ []*manifest.Record) {
			must(t, os.Chmod(file, 0o600))
			f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
			must(t, err)
			f.WriteString(`{"id":"x","name":"../a"}` + "\n")
			f.Close()
			must(t, os.Chmod(file, 0o400))
		}, fault.UploadMissing},
		{"named by two files", func(t *testing.T, s *localStore, file string, _ []*manifest.Record) {
			b, _ := os.ReadFile(file)
			bid := store.MetaFileBatch(filepath.Base(file))
			must(t, os.WriteFile(filepath.Join(filepath.Dir(file), store.MetaFileName(bid, 99)), b, 0o400))
		}, fault.UploadUnreadable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t)
			recs := commitSmall(t, s, 3, 1)
			files := metaFiles(t, s)
			if len(files) != 1 {
				t.Fatalf("metadata files %v, want one for the commit", files)
			}
			var st os.FileInfo
			st, err := os.Lstat(files[0])
			must(t, err)
			if st.Mode().Perm() != 0o400 {
				t.Fatalf("%s: mode %v", files[0], st.Mode())
			}
			if st, err := os.Lstat(filepath.Dir(files[0])); err != nil || st.Mode().Perm() != 0o700 {
				t.Fatalf("meta folder: %v %v", st.Mode(), err)
			}
			for _, r := range recs {
				ents, err := os.ReadDir(s.UploadDir(r.Upload.ID))
				must(t, err)
				if len(ents) != 1 || ents[0].Name() != r.Name {
					t.Fatalf("upload %s holds %v, want only %s", r.Upload.ID, ents, r.Name)
				}
			}
			c.damage(t, s, files[0], recs)
			fresh, err := openStore(s.Dir, false)
			must(t, err)
			for _, r := range recs {
				m, err := fresh.ReadMeta(r.Upload.ID)
				wantCode(t, err, c.code)
				if c.code == "" {
					if m.ID != r.Upload.ID || m.Name != r.Name || m.Size != r.Size || m.Blake3 != r.Blake3 || m.Made.IsZero() {
						t.Fatalf("metadata %+v, not the record's %+v", m, r)
					}
					must(t, fresh.Check(context.Background(), r.Upload.ID))
				}
			}
			l, err := fresh.list()
			must(t, err)
			finished := 0
			for _, e := range l.Entries {
				if e.Finished {
					finished++
				}
			}
			if want := map[bool]int{true: 3, false: 0}[c.code == ""]; finished != want || len(l.Skipped) != 3-want {
				t.Fatalf("listed %d finished, skipped %v; want %d finished", finished, l.Skipped, want)
			}
		})
	}
}

// The sweep removes a commit's metadata file once no upload it names is left and its batch has
// ended, and keeps it while one is left or the batch runs.
func TestPruneIndex(t *testing.T) {
	s := newStore(t)
	first := commitSmall(t, s, 2, 1)
	second := commitSmall(t, s, 2, 2)
	files := metaFiles(t, s)
	if len(files) != 2 {
		t.Fatalf("metadata files %v, want one a commit", files)
	}
	// A running batch's file (its staging partial held) naming no upload in the store yet: what
	// a commit has placed its metadata for and not yet its uploads.
	running := s.newBatch()
	st, err := running.staging()
	must(t, err)
	id, _ := store.NewID()
	ghost := &Meta{ID: id, Name: "g.txt", Size: 1, Blake3: strings.Repeat("0", 64)}
	var mf store.MetaFiles
	var x *store.StagedMeta
	must(t, mf.Join(&x, st.id, ghost, st.stagedMeta))
	must(t, x.Seal())
	must(t, x.Publish())

	remove := func(recs ...*manifest.Record) {
		t.Helper()
		sw, err := s.sweep(0, false)
		must(t, err)
		defer sw.Close()
		l, err := s.list()
		must(t, err)
		var doomed []store.Entry
		for _, e := range l.Entries {
			if slices.ContainsFunc(recs, func(r *manifest.Record) bool { return r.Upload.ID == e.ID }) {
				doomed = append(doomed, e)
			}
		}
		if len(doomed) != len(recs) {
			t.Fatalf("found %d of %d uploads to remove", len(doomed), len(recs))
		}
		must(t, sw.Remove(context.Background(), doomed, func(store.Entry) bool { return true },
			func(e store.Entry, o store.Outcome, err error) error {
				if o != store.Removed {
					t.Fatalf("%s: %v %v", e.ID, o, err)
				}
				return nil
			}))
	}
	has := func(want ...string) {
		t.Helper()
		var got []string
		for _, f := range metaFiles(t, s) {
			got = append(got, store.MetaFileBatch(filepath.Base(f)))
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("metadata files of batches %v, want %v", got, want)
		}
	}
	batchOf := func(r *manifest.Record) string {
		for _, f := range metaFiles(t, s) {
			ms, err := store.DecodeMetaFile(mustRead(t, f))
			must(t, err)
			if slices.ContainsFunc(ms, func(m *Meta) bool { return m.ID == r.Upload.ID }) {
				return store.MetaFileBatch(filepath.Base(f))
			}
		}
		t.Fatalf("no file names %s", r.Upload.ID)
		return ""
	}
	b1, b2 := batchOf(first[0]), batchOf(second[0])
	remove(first[0])
	has(b1, b2, st.id) // one upload of the first commit is left
	remove(first[1])
	has(b2, st.id) // none is: its file goes; the running batch's stays
	running.BatchIdle()
	remove(second...)
	has() // the batch ended, and its file names nothing in the store
	if _, err := s.ReadMeta(second[0].Upload.ID); fault.CodeOf(err) != fault.UploadMissing {
		t.Fatalf("a removed upload: %v", err)
	}
}

// A batch's staging partial is listed (a sweep removes what a killed run left) as a batch, and
// is not counted against the store's limits: what it builds is counted upload by upload.
func TestStagingNotCounted(t *testing.T) {
	s := newStore(t)
	commitSmall(t, s, 2, 1)
	b := s.newBatch()
	st, err := b.staging()
	must(t, err)
	l, err := s.list()
	must(t, err)
	var batches []store.Entry
	for _, e := range l.Entries {
		if e.Batch {
			batches = append(batches, e)
		}
	}
	if len(batches) != 1 || batches[0].ID != st.id || batches[0].Finished || !batches[0].Busy {
		t.Fatalf("batches listed %+v, want the held staging partial %s", batches, st.id)
	}
	if u := store.UsageOf(l); u.Files != 2 {
		t.Fatalf("usage %+v, want the 2 uploads only", u)
	}
	b.BatchIdle()
}

// STORE/.attachctl/meta replaced by a symlink to a copy elsewhere: nothing is read through it
// (the uploads it names are no finished uploads) and a commit writes nothing through it: its
// uploads fail with upload.unreadable and none is placed.
func TestMetaFolderSymlink(t *testing.T) {
	s := newStore(t)
	recs := commitSmall(t, s, 2, 1)
	elsewhere := filepath.Join(t.TempDir(), "meta")
	must(t, os.Rename(s.internal(metaDir), elsewhere))
	must(t, os.Symlink(elsewhere, s.internal(metaDir)))
	fresh, err := openStore(s.Dir, false)
	must(t, err)
	for _, r := range recs {
		_, err := fresh.ReadMeta(r.Upload.ID)
		wantCode(t, err, fault.UploadMissing)
	}
	before, _ := os.ReadDir(elsewhere)
	more, _ := batchFiles(t, 1)
	b := fresh.newBatch()
	err = fresh.UploadRecord(context.Background(), more[0], UploadOptions{Batch: b})
	if err == nil {
		err = b.Settle(more[0].Upload.ID)
	}
	wantCode(t, err, fault.UploadUnreadable)
	b.Commit()
	after, _ := os.ReadDir(elsewhere)
	if len(after) != len(before) {
		t.Fatalf("the folder the link points at went from %d files to %d", len(before), len(after))
	}
	ids, err := fresh.IDs()
	must(t, err)
	if len(ids) != 2 {
		t.Fatalf("uploads in the store %v, want the first 2 only", ids)
	}
}
