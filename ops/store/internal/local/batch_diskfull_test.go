//go:build linux

package local

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// smallTmpfs mounts a tmpfs of size (mount's -o size=) for the test: a disk that can be filled.
// Root only; CI runs as root, so there a test that cannot mount fails.
func smallTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("a small tmpfs needs root, and CI runs as root")
		}
		t.Skip("a small tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mount tmpfs: %v: %s", err, out)
		}
		t.Skipf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fillDisk writes the file path until the file system it is on has no byte left.
func fillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	must(t, err)
	defer f.Close()
	page := make([]byte, 4<<10)
	for {
		if _, err := f.Write(page); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	// A last write of a byte fails too: not even the tail of a page is left.
	if _, err := f.Write(page[:1]); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("the disk is not full: %v", err)
	}
}

// Uploads built into a batch are published by its commit even when the disk has filled up since
// (the next batch's builds took the room, or another writer did): everything the commit writes
// was written when they were built, so a full disk at the moment of commit costs none of them,
// and an upload that no longer fits fails alone, its metadata in no file of the store.
func TestBatchCommitOnFullDisk(t *testing.T) {
	mnt := smallTmpfs(t, "1m")
	s, err := openStore(filepath.Join(mnt, "store"), true)
	must(t, err)
	recs, contents := batchFiles(t, 21)
	b := s.newBatch()
	buildAll(t, b, recs[:20], 0) // staged: each is one chunk
	fillDisk(t, filepath.Join(mnt, "filler"))

	// The disk is full: one more upload does not fit, and fails on its own.
	err = s.UploadRecord(context.Background(), recs[20], UploadOptions{Batch: b})
	wantCode(t, err, fault.UploadDiskFull)
	if err := b.Commit(); err != nil {
		t.Fatalf("the commit of uploads built before the disk filled: %v", err)
	}
	ids, err := s.IDs()
	must(t, err)
	if want := idsOf(recs[:20]); !slices.Equal(ids, want) {
		t.Fatalf("finished %v, want %v", ids, want)
	}
	for i, r := range recs[:20] {
		m, err := s.ReadMeta(r.Upload.ID)
		must(t, err)
		if got := mustRead(t, r.Upload.Path); !bytes.Equal(got, contents[i]) || m.Blake3 != b3(contents[i]) || m.Size != int64(len(contents[i])) {
			t.Fatalf("upload %d: %d bytes, meta %+v", i, len(got), m)
		}
	}
	var named []string
	for _, f := range metaFiles(t, s) {
		ms, err := store.DecodeMetaFile(mustRead(t, f))
		must(t, err)
		for _, m := range ms {
			named = append(named, m.ID)
		}
	}
	slices.Sort(named)
	if !slices.Equal(named, ids) {
		t.Fatalf("the metadata names %v, the store holds %v", named, ids)
	}
	if partials, _ := s.partialIDs(); len(partials) != 0 {
		t.Fatalf("partials left: %v", partials)
	}
}

// A commit's metadata file on a disk that fills while it is written: the line that does not fit
// is not kept, not even in part, and the file names exactly the uploads whose lines it took.
func TestStagedIndexFullDisk(t *testing.T) {
	mnt := smallTmpfs(t, "1m")
	s, err := openStore(filepath.Join(mnt, "store"), true)
	must(t, err)
	st, err := s.newBatch().staging()
	must(t, err)
	var files store.MetaFiles
	var x *store.StagedMeta
	var taken []string
	add := func() error {
		id, _ := store.NewID()
		err := files.Join(&x, st.id, &Meta{ID: id, Name: "a-log-file-of-a-longer-name.log", Size: 1, Blake3: strings.Repeat("0", 64)}, st.stagedMeta)
		if err == nil {
			taken = append(taken, id)
		}
		return err
	}
	must(t, add())
	fillDisk(t, filepath.Join(mnt, "filler"))
	for {
		if err := add(); err != nil {
			wantCode(t, err, fault.UploadDiskFull)
			break
		}
	}
	must(t, x.Seal())
	got, err := store.DecodeMetaFile(mustRead(t, st.dir+"/"+x.Name))
	must(t, err)
	var named []string
	for _, m := range got {
		named = append(named, m.ID)
	}
	if !slices.Equal(named, taken) {
		t.Fatalf("the file names %v, the uploads taken were %v", named, taken)
	}
}
