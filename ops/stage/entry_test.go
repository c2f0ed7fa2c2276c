package stage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops/stage"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/storetest"
	"github.com/attachctl/attachctl/sniff"
)

// lsLine is the JSON line ls writes for rec, decoded.
func lsLine(t *testing.T, rec *manifest.Record) map[string]any {
	t.Helper()
	var buf bytes.Buffer
	w := manifest.NewWriter(&buf)
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("%s: %v", buf.Bytes(), err)
	}
	return m
}

// TestEntryRecord: ls's record of each kind of upload: a finished file (its hash from its
// metadata), a used one, a folder upload (its kind and file count), and an unfinished one (no
// upload, no hash, its path where it will be once finished).
func TestEntryRecord(t *testing.T) {
	b := storetest.NewMem("mem://ls")
	file, _ := memUpload(t, b, "a.txt", []byte("alpha\n"))
	used, _ := memUpload(t, b, "b.txt", []byte("bravo\n"))
	usedAt := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	if err := b.MarkUsed(bg, []string{used.Upload.ID}, usedAt); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range []string{"x", "y", "sub/z"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o700)
		if err := os.WriteFile(filepath.Join(dir, f), []byte(f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	folder := &manifest.Record{Path: dir}
	if err := sniff.FillFolder(folder, sniff.Options{}, sniff.WalkOptions{}); err != nil {
		t.Fatal(err)
	}
	u, err := stage.NewUploader(b, stage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Upload(bg, folder, nil); err != nil {
		t.Fatal(err)
	}
	open, err := b.Begin(bg, "c.txt", 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Write(bg, open, 0, strings.NewReader("cha")); err != nil {
		t.Fatal(err)
	}
	l, err := stage.Uploads(bg, b)
	if err != nil {
		t.Fatal(err)
	}
	entries := map[string]store.Entry{}
	for _, e := range l.Entries {
		entries[e.ID] = e
	}
	for _, tc := range []struct {
		id   string
		want map[string]any // fields of the line; nil: absent
	}{
		{file.Upload.ID, map[string]any{"name": "a.txt", "size": 6.0, "blake3": hexOf([]byte("alpha\n")), "finished": true,
			"lastUsed": nil, "kind": nil, "path": "mem://ls/" + file.Upload.ID + "/a.txt",
			"upload": map[string]any{"id": file.Upload.ID, "store": "mem://ls", "path": "mem://ls/" + file.Upload.ID + "/a.txt"}}},
		{used.Upload.ID, map[string]any{"name": "b.txt", "finished": true, "lastUsed": "2026-11-30T08:00:00Z"}},
		{folder.Upload.ID, map[string]any{"kind": "folder", "mime": manifest.MimeFolder, "files": 3.0, "finished": true, "blake3": folder.Blake3}},
		{open, map[string]any{"name": "c.txt", "size": 3.0, "finished": false, "upload": nil, "blake3": nil,
			"path": "mem://ls/" + open + "/c.txt", "id": open}},
	} {
		e, ok := entries[tc.id]
		if !ok {
			t.Fatalf("%s is not listed: %+v", tc.id, l.Entries)
		}
		got := lsLine(t, stage.EntryRecord(b, e))
		if got["id"] != tc.id || got["made"] == nil {
			t.Errorf("%s: id %v, made %v", tc.id, got["id"], got["made"])
		}
		for k, v := range tc.want {
			g, present := got[k]
			if v == nil {
				if present && g != nil {
					t.Errorf("%s: %s is %v, want none", tc.id, k, g)
				}
				continue
			}
			gj, _ := json.Marshal(g)
			vj, _ := json.Marshal(v)
			if !bytes.Equal(gj, vj) {
				t.Errorf("%s: %s is %s, want %s", tc.id, k, gj, vj)
			}
		}
	}
}

// listed is a store whose listing is l.
type listed struct {
	store.Backend
	l store.Listing
}

func (s listed) List(context.Context) (*store.Listing, error) { l := s.l; return &l, nil }

// TestUploadsLeavesOutBatches: a batch's staging area (the local store's) is no upload: ls leaves
// it out, and keeps what the store did not recognise.
func TestUploadsLeavesOutBatches(t *testing.T) {
	b := listed{Backend: storetest.NewMem("mem://ls"), l: store.Listing{
		Entries: []store.Entry{{ID: "a", Finished: true}, {ID: "staging", Batch: true}, {ID: "b"}},
		Skipped: []store.Skip{{Path: "stray", Why: "not an upload"}},
	}}
	l, err := stage.Uploads(bg, b)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range l.Entries {
		ids = append(ids, e.ID)
	}
	if strings.Join(ids, " ") != "a b" || len(l.Skipped) != 1 {
		t.Fatalf("listed %v, skipped %v; want a and b, and the stray entry skipped", ids, l.Skipped)
	}
}
