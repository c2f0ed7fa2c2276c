package s3

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/stage"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/storetest/s3test"
	"github.com/attachctl/attachctl/sniff"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/zeebo/blake3"
)

// TestTreeResumeSendsWhatIsMissing: a folder upload interrupted, then one of its objects damaged
// on the server and an object the folder does not hold put beside them, is resumed by sending
// only the files the server does not hold whole (by size and ETag) and the damaged one; the
// stray object is gone before the upload is finished, so verify finds the tree exact.
func TestTreeResumeSendsWhatIsMissing(t *testing.T) {
	srv := s3test.Start(t)
	s := newStore(t, srv)
	bg := context.Background()
	root := filepath.Join(t.TempDir(), "logs")
	var rels []string
	for i := 0; i < 40; i++ {
		rel := filepath.Join(string(rune('a'+i%4)), strings.Repeat("x", i+1)+".txt")
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, bytes.Repeat([]byte{byte('A' + i)}, 100+i), 0o600); err != nil {
			t.Fatal(err)
		}
		rels = append(rels, filepath.ToSlash(rel))
	}
	sort.Strings(rels)
	rec := &manifest.Record{Path: root}
	if err := sniff.FillFolder(rec, sniff.Options{}, sniff.WalkOptions{}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	sent := map[string]int{}
	treeSends(s, func(rel string) {
		mu.Lock()
		sent[rel]++
		mu.Unlock()
	})
	ctx, cancel := context.WithCancel(bg)
	n := 0
	err := s.UploadRecord(ctx, rec, UploadOptions{Progress: func(int64) {
		if n++; n == 10 {
			cancel()
		}
	}})
	cancel()
	if err == nil || !errors.Is(err, context.Canceled) && fault.CodeOf(err) != fault.UploadMissing {
		t.Fatalf("interrupted upload: %v", err)
	}
	l, err := s.List(bg)
	if err != nil || len(l.Entries) != 1 || l.Entries[0].Finished {
		t.Fatalf("after the interruption: %+v, %v", l, err)
	}
	id := l.Entries[0].ID
	dir := s.treeDir(id, "logs")
	// What the server holds once it has caught up: a request the cancel cut short on the client
	// may still land (storetest's settle).
	var held []string
	for i, last := 0, "-"; i < 100 && strings.Join(held, "\n") != last; i++ {
		last, held = strings.Join(held, "\n"), nil
		time.Sleep(50 * time.Millisecond)
		s.listObjects(bg, dir, func(o types.Object) error {
			held = append(held, strings.TrimPrefix(aws.ToString(o.Key), dir))
			return nil
		})
	}
	if len(held) == 0 || len(held) == len(rels) {
		t.Fatalf("%d of %d objects on the server after the interruption; want some", len(held), len(rels))
	}
	damaged := held[0]
	put := func(key, body string) {
		if _, err := s.client.PutObject(bg, &awss3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String(key), Body: strings.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	put(dir+damaged, "not the source's bytes")
	put(dir+"stray.txt", "a file the folder does not hold")

	clear(sent)
	rec2 := &manifest.Record{Path: root, Kind: manifest.KindFolder, Blake3: rec.Blake3}
	if err := s.UploadRecord(bg, rec2, UploadOptions{}); err != nil {
		t.Fatal(err)
	}
	if rec2.Upload == nil || rec2.Upload.ID != id {
		t.Fatalf("resumed as %+v, want %s", rec2.Upload, id)
	}
	keep := map[string]bool{}
	for _, h := range held[1:] {
		keep[h] = true
	}
	for _, rel := range rels {
		switch {
		case keep[rel] && sent[rel] > 0:
			t.Errorf("%s was on the server whole and was sent again", rel)
		case !keep[rel] && sent[rel] != 1:
			t.Errorf("%s was sent %d times on the resume, want once", rel, sent[rel])
		}
	}
	if _, err := s.VerifyTree(bg, id, nil); err != nil {
		t.Fatalf("verify after the resume: %v", err)
	}
	// Run again: named again, nothing sent.
	clear(sent)
	if err := s.UploadRecord(bg, &manifest.Record{Path: root, Kind: manifest.KindFolder, Blake3: rec.Blake3}, UploadOptions{}); err != nil || len(sent) != 0 {
		t.Fatalf("the same folder again: %v, sent %v", err, sent)
	}
}

// folderRec writes files under a new folder and returns its record as sniff makes it.
// uploadedFolder is a store on a new server holding one finished folder upload "proj" of files.
func uploadedFolder(t *testing.T, files map[string]string) (*Store, string) {
	t.Helper()
	s := newStore(t, s3test.Start(t))
	rec := folderRec(t, "proj", files)
	if err := s.UploadRecord(context.Background(), rec, UploadOptions{}); err != nil {
		t.Fatal(err)
	}
	return s, rec.Upload.ID
}

func folderRec(t *testing.T, name string, files map[string]string) *manifest.Record {
	t.Helper()
	root := filepath.Join(t.TempDir(), name)
	for rel, data := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rec := &manifest.Record{Path: root}
	if err := sniff.FillFolder(rec, sniff.Options{}, sniff.WalkOptions{}); err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestTreeTwoAtOnce: two uploads of one folder at the same time name one upload, finished once.
func TestTreeTwoAtOnce(t *testing.T) {
	srv := s3test.Start(t)
	files := map[string]string{}
	for i := 0; i < 30; i++ {
		files[string(rune('a'+i%3))+"/"+strings.Repeat("f", i+1)] = strings.Repeat("x", i)
	}
	rec := folderRec(t, "proj", files)
	s1, s2 := newStore(t, srv), (*Store)(nil)
	var err error
	if s2, err = openURI(context.Background(), s1.URI, Options{}); err != nil {
		t.Fatal(err)
	}
	recs := []*manifest.Record{{Path: rec.Path, Kind: rec.Kind, Blake3: rec.Blake3}, {Path: rec.Path, Kind: rec.Kind, Blake3: rec.Blake3}}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, s := range []*Store{s1, s2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.UploadRecord(context.Background(), recs[i], UploadOptions{})
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("two uploads at once: %v, %v", errs[0], errs[1])
	}
	if recs[0].Upload.ID != recs[1].Upload.ID {
		t.Fatalf("two uploads of one folder made %s and %s", recs[0].Upload.ID, recs[1].Upload.ID)
	}
	l, err := s1.List(context.Background())
	if err != nil || len(l.Entries) != 1 || !l.Entries[0].Finished {
		t.Fatalf("after two uploads at once: %+v, %v", l, err)
	}
	if _, err := s1.VerifyTree(context.Background(), recs[0].Upload.ID, nil); err != nil {
		t.Fatal(err)
	}
}

// TestTreeSweepKilled: a sweep killed after it deleted a folder upload's listing (its tombstone
// and files left) leaves an unfinished upload, never a finished one: no use marks it, and the next
// sweep removes what is left whole.
func TestTreeSweepKilled(t *testing.T) {
	s, id := uploadedFolder(t, map[string]string{"a/1": "one", "b/2": "two"})
	bg := context.Background()
	m, err := store.ReadUseMark(bg, objects{s}, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.WriteUseMark(bg, objects{s}, id, m, "tombstone", time.Now(), store.ErrSweepKept); err != nil {
		t.Fatal(err)
	}
	if err := s.deleteKeys(bg, []string{s.treeKey(id)}); err != nil { // killed here
		t.Fatal(err)
	}
	l, err := s.List(bg)
	if err != nil || len(l.Entries) != 1 || l.Entries[0].Finished || l.Entries[0].Name != "proj" || len(l.Skipped) != 0 {
		t.Fatalf("after a killed sweep: %+v, %v", l, err)
	}
	if err := s.MarkUsed(bg, []string{id}, time.Now()); fault.CodeOf(err) != fault.UploadMissing {
		t.Fatalf("marking the half-removed upload used: %v", err)
	}
	sw, err := s.Sweep(bg, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	var got []store.Outcome
	err = sw.Remove(bg, l.Entries, func(store.Entry) bool { return true }, func(e store.Entry, o store.Outcome, err error) error {
		got = append(got, o)
		return err
	})
	sw.Close()
	if err != nil || len(got) != 1 || got[0] != store.Removed {
		t.Fatalf("the next sweep: %v, %v", got, err)
	}
	n := 0
	s.listObjects(bg, s.key(id)+"/", func(types.Object) error { n++; return nil })
	if n != 0 {
		t.Fatalf("%d objects of %s left after the next sweep", n, id)
	}
}

// TestTreeFaults: a folder upload goes through the S3 client's retries (a 503 answer to a PUT
// is retried and the upload finishes), and a server that breaks connections in the middle makes
// it store.unreachable with the objects sent kept; run again once the server is well, it resumes
// under the same id and sends only the rest.
func TestTreeFaults(t *testing.T) {
	srv := s3test.Start(t)
	files := map[string]string{}
	for i := 0; i < 24; i++ {
		files[string(rune('a'+i%5))+"/"+strings.Repeat("n", i+1)] = strings.Repeat("y", 50+i)
	}
	isFilePut := func(r *http.Request) bool {
		return r.Method == "PUT" && strings.Contains(r.URL.Path, "/proj/") && r.URL.Query().Get("partNumber") == ""
	}

	s, p := proxied(t, srv, Options{})
	var seenMu sync.Mutex
	seen := map[string]bool{}
	p.SetFault(func(w http.ResponseWriter, r *http.Request) bool { // the first PUT of 4 files
		if !isFilePut(r) {
			return false
		}
		seenMu.Lock()
		first := !seen[r.URL.Path] && len(seen) < 4
		seen[r.URL.Path] = true
		seenMu.Unlock()
		if first {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		return first
	})
	rec := folderRec(t, "proj", files)
	if err := s.UploadRecord(bg, rec, UploadOptions{}); err != nil {
		t.Fatalf("through 503 answers: %v", err)
	}
	if _, err := s.VerifyTree(bg, rec.Upload.ID, nil); err != nil || len(seen) != len(files) {
		t.Fatalf("verify: %v; %d of %d files were sent", err, len(seen), len(files))
	}

	s, p = proxied(t, srv, Options{MaxAttempts: 1})
	var puts atomic.Int64
	p.SetFault(func(w http.ResponseWriter, r *http.Request) bool {
		if isFilePut(r) && puts.Add(1) > 10 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return true
		}
		return false
	})
	rec = folderRec(t, "proj", files)
	err := s.UploadRecord(bg, rec, UploadOptions{})
	if fault.CodeOf(err) != fault.StoreUnreachable {
		t.Fatalf("a server that breaks connections: %v, want store.unreachable", err)
	}
	l, err := s.List(bg)
	if err != nil || len(l.Entries) != 1 || l.Entries[0].Finished {
		t.Fatalf("after the failure: %+v, %v", l, err)
	}
	id := l.Entries[0].ID
	p.SetFault(nil)
	// What the server holds whole (a PUT is all or nothing): at most the 10 let through, fewer
	// when the failure cancelled some in flight (and one the server was still writing may land
	// after this listing). The resume must send none of these again, and every other file.
	dir := s.treeDir(id, "proj")
	held := map[string]bool{}
	s.listObjects(bg, dir, func(o types.Object) error {
		held[strings.TrimPrefix(aws.ToString(o.Key), dir)] = true
		return nil
	})
	if len(held) > 10 {
		t.Fatalf("%d objects held after 10 PUTs went through", len(held))
	}
	var mu sync.Mutex
	sent := map[string]bool{}
	treeSends(s, func(rel string) { mu.Lock(); sent[rel] = true; mu.Unlock() })
	again := &manifest.Record{Path: rec.Path, Kind: manifest.KindFolder, Blake3: rec.Blake3}
	if err := s.UploadRecord(bg, again, UploadOptions{}); err != nil {
		t.Fatal(err)
	}
	if again.Upload.ID != id || len(sent) == 0 || len(sent) > len(files)-len(held) {
		t.Fatalf("resumed as %s with %d files sent; want %s and at most the %d the server lacked", again.Upload.ID, len(sent), id, len(files)-len(held))
	}
	for rel := range sent {
		if held[rel] {
			t.Errorf("%s sent again, though the server held it whole", rel)
		}
	}
	if _, err := s.VerifyTree(bg, id, nil); err != nil {
		t.Fatal(err)
	}
}

// TestTreeLargeFileInParts: a file over treeParts inside a folder goes as a multipart upload
// (two parts here), reads back equal; an object already there with its size and BLAKE3 is not
// sent again; a multipart upload a killed run left under the folder upload is aborted by the
// sweep that removes it.
func TestTreeLargeFileInParts(t *testing.T) {
	old := treeParts
	treeParts = MinChunk
	defer func() { treeParts = old }()
	srv := s3test.Start(t)
	s := newStore(t, srv)
	root := filepath.Join(t.TempDir(), "vm")
	os.MkdirAll(root, 0o700)
	data := bytes.Repeat([]byte("0123456789abcdef"), (DefaultChunk+MinChunk)/16+7)
	if err := os.WriteFile(filepath.Join(root, "disk.img"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("small"), 0o600); err != nil {
		t.Fatal(err)
	}
	rec := &manifest.Record{Path: root}
	if err := sniff.FillFolder(rec, sniff.Options{}, sniff.WalkOptions{}); err != nil {
		t.Fatal(err)
	}
	var parts atomic.Int64
	if err := s.UploadRecord(bg, rec, UploadOptions{Sent: func(int32) { parts.Add(1) }}); err != nil {
		t.Fatal(err)
	}
	if parts.Load() != 2 {
		t.Fatalf("%d parts sent for a file of %d bytes, want 2", parts.Load(), len(data))
	}
	id := rec.Upload.ID
	r, err := s.OpenTreeFile(bg, id, "vm", "disk.img")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("disk.img reads back %d bytes (%v), not its %d", len(got), err, len(data))
	}
	if _, err := s.VerifyTree(bg, id, nil); err != nil {
		t.Fatal(err)
	}
	// The object is there whole: a send of it again sends nothing.
	src := store.TreeSource{Path: root, Name: "vm", Open: stage.OpenTreeFile}
	f := store.TreeFile{Rel: "disk.img", Path: filepath.Join(root, "disk.img"), Size: int64(len(data))}
	sf, err := src.OpenFile(f)
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	sent := 0
	treeSends(s, func(string) { sent++ })
	sum := blake3.Sum256(data)
	if err := s.sendTreeParts(bg, id, "vm", f, sf, hex.EncodeToString(sum[:]), int64(len(data))); err != nil || sent != 0 {
		t.Fatalf("sending a file the server holds whole: %v, %d sends", err, sent)
	}
	// What a kill leaves: a multipart upload of a file under the folder upload.
	key := s.treeFileKey(id, "vm", "disk.img")
	if _, err := s.client.CreateMultipartUpload(bg, &awss3.CreateMultipartUploadInput{Bucket: &s.Bucket, Key: &key}); err != nil {
		t.Fatal(err)
	}
	if mps, err := (objects{s}).Multiparts(bg, id+"/"); err != nil || len(mps) != 1 || mps[0].ID != id || mps[0].Name != "vm" {
		t.Fatalf("the left multipart upload is seen as %+v (%v)", mps, err)
	}
	l, err := s.List(bg)
	if err != nil || len(l.Entries) != 1 {
		t.Fatalf("list: %+v, %v", l, err)
	}
	sw, err := s.Sweep(bg, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	err = sw.Remove(bg, l.Entries, func(store.Entry) bool { return true }, func(e store.Entry, o store.Outcome, err error) error {
		if o != store.Removed {
			t.Errorf("%s: %v, %v", e.ID, o, err)
		}
		return nil
	})
	sw.Close()
	if err != nil {
		t.Fatal(err)
	}
	if mps, err := (objects{s}).Multiparts(bg, ""); err != nil || len(mps) != 0 {
		t.Fatalf("multipart uploads left after the sweep: %+v (%v)", mps, err)
	}
}

// sourceNotes is every source note under the store: its key -> the id it names.
func sourceNotes(t *testing.T, s *Store) map[string]string {
	t.Helper()
	notes := map[string]string{}
	bg := context.Background()
	err := s.listObjects(bg, s.key(internalDir, "source")+"/", func(o types.Object) error {
		notes[aws.ToString(o.Key)], _ = s.notes.Read(bg, strings.TrimPrefix(aws.ToString(o.Key), s.root()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return notes
}

// sweepIDs runs a sweep that removes the uploads ids of the store's listing.
func sweepIDs(t *testing.T, s *Store, ids ...string) {
	t.Helper()
	bg := context.Background()
	l, err := s.List(bg)
	if err != nil {
		t.Fatal(err)
	}
	sw, err := s.Sweep(bg, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	removed := 0
	err = sw.Remove(bg, l.Entries, func(e store.Entry) bool { return slices.Contains(ids, e.ID) }, func(e store.Entry, o store.Outcome, err error) error {
		if o == store.Removed {
			removed++
		}
		return err
	})
	if err != nil || removed != len(ids) {
		t.Fatalf("sweep of %v: %d removed, %v", ids, removed, err)
	}
}

// TestTreeSweepDropsNote: the sweep that removes a folder upload removes its source note when
// the note names that upload, finished or not, and never a note naming another upload (here one
// another run pointed at another upload since).
func TestTreeSweepDropsNote(t *testing.T) {
	srv := s3test.Start(t)
	s := newStore(t, srv)
	bg := context.Background()
	up := func(rec *manifest.Record) string {
		t.Helper()
		if err := s.UploadRecord(bg, rec, UploadOptions{}); err != nil {
			t.Fatal(err)
		}
		return rec.Upload.ID
	}
	a := up(folderRec(t, "proj", map[string]string{"a/1": "one", "b/2": "two"}))
	b := up(folderRec(t, "other", map[string]string{"x": "ex"}))
	cRec := folderRec(t, "third", map[string]string{"y": "why"})
	c := up(cRec)
	notes := sourceNotes(t, s)
	if len(notes) != 3 {
		t.Fatalf("notes after three folder uploads: %v", notes)
	}
	var noteC string
	for k, id := range notes {
		if id == c {
			noteC = k
		}
	}
	// The note of c now names b (as a run of that folder would have written over a dead one).
	if _, err := s.client.PutObject(bg, &awss3.PutObjectInput{Bucket: &s.Bucket, Key: &noteC, Body: strings.NewReader(`{"id":"` + b + `"}`)}); err != nil {
		t.Fatal(err)
	}
	sweepIDs(t, s, a, c)
	notes = sourceNotes(t, s)
	if len(notes) != 2 || notes[noteC] != b {
		t.Fatalf("notes after the sweep of %s and %s: %v; want b's own and the one renamed to b", a, c, notes)
	}
	for k, id := range notes {
		if id == a {
			t.Errorf("note %s of the swept upload %s left", k, a)
		}
	}

	// An unfinished folder upload (interrupted) swept: its note goes too.
	files := map[string]string{}
	for i := range 20 {
		files[string(rune('a'+i%3))+"/"+strings.Repeat("f", i+1)] = strings.Repeat("x", i+1)
	}
	ctx, cancel := context.WithCancel(bg)
	n := 0
	err := s.UploadRecord(ctx, folderRec(t, "half", files), UploadOptions{Progress: func(int64) {
		if n++; n == 5 {
			cancel()
		}
	}})
	cancel()
	if err == nil {
		t.Fatal("the interrupted upload finished")
	}
	var half string
	for _, id := range sourceNotes(t, s) {
		if id != b {
			half = id
		}
	}
	if pi, err := s.readInfo(bg, half); err != nil || pi.Kind != store.KindFolder || pi.Note == "" {
		t.Fatalf("the interrupted upload's info: %+v, %v", pi, err)
	}
	sweepIDs(t, s, half)
	if notes := sourceNotes(t, s); len(notes) != 2 || notes[noteC] != b {
		t.Fatalf("notes after the sweep of the unfinished %s: %v", half, notes)
	}
}

// TestTreeStaleNote: a source note naming an upload that is no more (a sweep from before notes
// were removed, or one killed before it got to it) does not stop the next upload of that folder:
// a new upload, finished and whole, and the note names it. The same when the upload's files are
// still there without their listing (a sweep killed half way).
func TestTreeStaleNote(t *testing.T) {
	srv := s3test.Start(t)
	s := newStore(t, srv)
	bg := context.Background()
	rec := folderRec(t, "proj", map[string]string{"a/1": "one", "b/2": "two"})
	for _, leave := range []string{"nothing", "the files"} {
		r := &manifest.Record{Path: rec.Path, Kind: rec.Kind, Blake3: rec.Blake3}
		if err := s.UploadRecord(bg, r, UploadOptions{}); err != nil {
			t.Fatal(err)
		}
		old := r.Upload.ID
		var keys []string
		s.listObjects(bg, s.key(old)+"/", func(o types.Object) error {
			if k := aws.ToString(o.Key); leave == "nothing" || k == s.treeKey(old) || k == s.treeMetaKey(old) {
				keys = append(keys, k)
			}
			return nil
		})
		if err := s.deleteKeys(bg, keys); err != nil {
			t.Fatal(err)
		}
		if notes := sourceNotes(t, s); len(notes) != 1 {
			t.Fatalf("%s left: notes %v, want the stale one", leave, notes)
		}
		r = &manifest.Record{Path: rec.Path, Kind: rec.Kind, Blake3: rec.Blake3}
		if err := s.UploadRecord(bg, r, UploadOptions{}); err != nil {
			t.Fatalf("%s left: upload again over a stale note: %v", leave, err)
		}
		if r.Upload.ID == old {
			t.Fatalf("%s left: named the removed upload %s again", leave, old)
		}
		if _, err := s.VerifyTree(bg, r.Upload.ID, nil); err != nil {
			t.Fatalf("%s left: %v", leave, err)
		}
		for k, id := range sourceNotes(t, s) {
			if id != r.Upload.ID {
				t.Fatalf("%s left: note %s names %s, want the new upload %s", leave, k, id, r.Upload.ID)
			}
		}
		sweepIDs(t, s, r.Upload.ID)
	}
}

// TestListRequests: a listing of a store holding every kind of entry (finished file and folder
// uploads, used and not, an unfinished step-by-step upload, an unfinished folder upload with its
// info, the files of one without, a multipart upload with no info) gives each its entry and makes
// one listing of the prefix, one of the multipart uploads, and per upload only what its kind
// needs: no request per unfinished folder upload beyond its info, its size summed over the
// listing already made.
func TestListRequests(t *testing.T) {
	srv := s3test.Start(t)
	s := newStore(t, srv)
	bg := context.Background()
	dir := t.TempDir()
	var files []string
	for i := range 4 {
		rec := &manifest.Record{Path: randomFile(t, dir, fmt.Sprintf("f%d.bin", i), 100+int64(i), uint64(i))}
		if err := s.UploadRecord(bg, rec, UploadOptions{}); err != nil {
			t.Fatal(err)
		}
		files = append(files, rec.Upload.ID)
	}
	if err := s.MarkUsed(bg, files[:2], time.Now()); err != nil {
		t.Fatal(err)
	}
	folder := folderRec(t, "proj", map[string]string{"a/1": "one", "b/2": "two", "3": "three"})
	if err := s.UploadRecord(bg, folder, UploadOptions{}); err != nil {
		t.Fatal(err)
	}
	// An unfinished folder upload: what a stage killed before its metadata and listing leaves,
	// its info kept.
	half := folderRec(t, "half", map[string]string{"x/1": "12345", "2": "1234567"})
	if err := s.UploadRecord(bg, half, UploadOptions{}); err != nil {
		t.Fatal(err)
	}
	hid := half.Upload.ID
	if err := s.deleteKeys(bg, []string{s.treeKey(hid), s.treeMetaKey(hid), s.usedKey(hid)}); err != nil {
		t.Fatal(err)
	}
	if err := store.WriteInfo(bg, objects{s}, hid, partialInfo{Name: "half", Size: -1, Made: nowString(), Kind: store.KindFolder}, ""); err != nil {
		t.Fatal(err)
	}
	// The files of a folder upload with neither info nor listing.
	left := folderRec(t, "left", map[string]string{"l/1": "1234"})
	if err := s.UploadRecord(bg, left, UploadOptions{}); err != nil {
		t.Fatal(err)
	}
	lid := left.Upload.ID
	if err := s.deleteKeys(bg, []string{s.treeKey(lid), s.treeMetaKey(lid), s.usedKey(lid)}); err != nil {
		t.Fatal(err)
	}
	// An unfinished step-by-step upload, and a multipart upload with no info.
	pid, err := s.Begin(bg, "step.bin", 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(bg, pid, 0, strings.NewReader("12345")); err != nil {
		t.Fatal(err)
	}
	const bare = "01900000-0000-7000-8000-0000000000b0"
	key := s.key(bare, "big.bin")
	if _, err := s.client.CreateMultipartUpload(bg, &awss3.CreateMultipartUploadInput{Bucket: &s.Bucket, Key: &key}); err != nil {
		t.Fatal(err)
	}

	c := countRequests(s)
	l, err := s.List(bg)
	if err != nil {
		t.Fatal(err)
	}
	got := c.take()
	if len(l.Skipped) != 0 {
		t.Fatalf("skipped %+v", l.Skipped)
	}
	type want struct {
		name     string
		size     int64
		finished bool
		used     bool
	}
	wants := map[string]want{
		files[0]: {"f0.bin", 100, true, true}, files[1]: {"f1.bin", 101, true, true},
		files[2]: {"f2.bin", 102, true, false}, files[3]: {"f3.bin", 103, true, false},
		folder.Upload.ID: {"proj", 11, true, false},
		hid:              {"half", 12, false, true}, lid: {"left", 4, false, true},
		pid: {"step.bin", 5, false, true}, bare: {"big.bin", 0, false, true},
	}
	if len(l.Entries) != len(wants) {
		t.Fatalf("%d entries, want %d: %+v", len(l.Entries), len(wants), l.Entries)
	}
	for _, e := range l.Entries {
		w, ok := wants[e.ID]
		if !ok || e.Name != w.name || e.Size != w.size || e.Finished != w.finished || e.LastUsed.IsZero() == w.used || e.Made.IsZero() {
			t.Errorf("entry %+v, want %+v", e, w)
		}
	}
	// One listing of the prefix, which shows the chunks of the step-by-step upload too; a HEAD
	// of each finished file upload and of the folder upload's listing; a GET of each marker, of
	// the folder upload's metadata and of each info the listing showed.
	if got["ListObjectsV2"] != 1 || got["ListMultipartUploads"] != 1 || got["HeadObject"] != 5 || got["GetObject"] != 2+1+2 {
		t.Fatalf("requests of a listing: %v", got)
	}
	// ls's record of each upload (its hash, a folder upload's file count) is the listing's:
	// no request per upload beside the listing's own.
	for _, e := range l.Entries {
		rec := stage.EntryRecord(s, e)
		if e.ID == folder.Upload.ID && (rec.Files != 3 || rec.Blake3 != folder.Blake3) || e.ID == files[0] && rec.Kind != "" {
			t.Errorf("ls record of %s: %+v", e.ID, rec)
		}
	}
	if got := c.take(); len(got) != 0 {
		t.Fatalf("requests of ls's records of %d listed uploads: %v", len(l.Entries), got)
	}
}

// TestTreeVerifyNamesBeside: verify names each object beside the folder that is not the upload's
// (store.BesideUpload): a stray object, one in another folder, one whose name starts as the
// listing's; the folder's files, the listing, the metadata and the marker are not named.
func TestTreeVerifyNamesBeside(t *testing.T) {
	s, id := uploadedFolder(t, map[string]string{"a/x.txt": "x", "y.txt": "yy"})
	bg := context.Background()
	if err := s.MarkUsed(bg, []string{id}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.VerifyTree(bg, id, nil); err != nil {
		t.Fatalf("verify of an intact folder upload: %v", err)
	}
	stray := []string{s.key(id, "stray"), s.key(id, "other", "f"), s.key(id, store.TreeListName+".tmp")}
	for _, k := range stray {
		if _, err := s.client.PutObject(bg, &awss3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String(k), Body: strings.NewReader("?")}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.VerifyTree(bg, id, nil)
	if fault.CodeOf(err) != fault.VerifyMismatch {
		t.Fatalf("verify with objects beside the folder: %v", err)
	}
	for _, k := range stray {
		if !strings.Contains(err.Error(), k+": unexpected object beside the folder") {
			t.Errorf("verify does not name %s: %v", k, err)
		}
	}
	for _, k := range []string{s.treeKey(id), s.treeMetaKey(id), s.usedKey(id), s.treeFileKey(id, "proj", "y.txt")} {
		if strings.Contains(err.Error(), k+":") {
			t.Errorf("verify names %s, the upload's own: %v", k, err)
		}
	}
}

// TestTreePublishFinishedMeanwhile: a run that publishes a folder upload another run of the same
// folder finished first (its listing there) takes it when the listing there is these very bytes,
// and is refused (upload.hashMismatch) when it is another tree's; the upload stays intact.
func TestTreePublishFinishedMeanwhile(t *testing.T) {
	s, id := uploadedFolder(t, map[string]string{"a/x.txt": "x", "y.txt": "yy"})
	mb, _, err := s.ReadTreeObject(bg, id, store.MetaName)
	if err != nil {
		t.Fatal(err)
	}
	listing, _, err := s.ReadTreeObject(bg, id, store.TreeListName)
	if err != nil {
		t.Fatal(err)
	}
	m, err := store.ParseTreeMeta(id, mb, store.MetaName)
	if err != nil {
		t.Fatal(err)
	}
	ti, err := s.TreeInfo(bg, id)
	if err != nil {
		t.Fatal(err)
	}
	// The other run: the same upload, its note check done (its tries spent).
	w := &treeWrite{s: s, id: id, name: "proj", note: s.key(internalDir, "source", "00"), try: 3}
	if err := w.Publish(bg, m, ti.Files, listing); err != nil {
		t.Fatalf("publish of the same tree, finished meanwhile: %v", err)
	}
	if _, err := s.VerifyTree(bg, id, nil); err != nil {
		t.Fatal(err)
	}
	other := *m
	listing = append(listing, "0000000000000000000000000000000000000000000000000000000000000000  z.txt\n"...)
	h := blake3.Sum256(listing)
	other.Blake3 = hex.EncodeToString(h[:])
	if err := w.Publish(bg, &other, ti.Files, listing); fault.CodeOf(err) != fault.UploadHashMismatch {
		t.Fatalf("publish of another tree, finished meanwhile: %v", err)
	}
}

// treeSends makes s call sent with the path (from the folder) of each file of a folder upload it
// sends from now on: a PUT of the file's object, or the start of its multipart upload.
func treeSends(s *Store, sent func(rel string)) {
	s.client = awss3.New(s.client.Options(), func(o *awss3.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("treeSends", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				var key *string
				switch p := in.Parameters.(type) {
				case *awss3.PutObjectInput:
					key = p.Key
				case *awss3.CreateMultipartUploadInput:
					key = p.Key
				}
				// P/<id>/<name>/<rel>: below the folder of an upload.
				if k, ok := strings.CutPrefix(aws.ToString(key), s.root()); ok {
					if parts := strings.SplitN(k, "/", 3); len(parts) == 3 && store.ValidID(parts[0]) == nil {
						sent(parts[2])
					}
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
		})
	})
}

// TestTreeMetaOverOneMiB: a folder upload's .upload.json longer than a MiB (each file's size is in
// it: a folder of a few hundred thousand files) is read whole by ls as by its info, up to the
// limit every store reads a listing or metadata to (store.TreeObjectMax).
func TestTreeMetaOverOneMiB(t *testing.T) {
	s, id := uploadedFolder(t, map[string]string{"a/x.txt": "x", "y.txt": "yy"})
	bg := context.Background()
	b, _, _, err := s.getObject(bg, s.treeMetaKey(id))
	if err != nil {
		t.Fatal(err)
	}
	// The same metadata made as long as that of so many files: JSON, padded with spaces.
	b = append([]byte(strings.Repeat(" ", 1<<20)), b...)
	if _, err := s.client.PutObject(bg, &awss3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String(s.treeMetaKey(id)), Body: bytes.NewReader(b)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TreeInfo(bg, id); err != nil {
		t.Fatalf("tree info: %v", err)
	}
	l, err := s.List(bg)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Entries) != 1 || !l.Entries[0].Folder || l.Entries[0].Files != 2 || len(l.Skipped) != 0 {
		t.Fatalf("list: %+v, skipped %+v; want the folder upload of 2 files", l.Entries, l.Skipped)
	}
}
