package storetest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/stage"
	"github.com/attachctl/attachctl/ops/store"
)

// What the stages above the seam (ops/stage) ask of a backend: a whole source put in and named
// again (the source note), an interrupted upload resumed at its resume point under the same id,
// never mixing an old source with a new one, the group commit, the backend's own checks, and the
// plain Begin/Write/Finish path the stage takes for a backend without a Streamer.
var stageTests = []struct {
	name string
	f    func(t *testing.T, h Harness)
}{
	{"StageUploadAndNameAgain", testStageUpload},
	{"StageResumePoint", testStageResume},
	{"StageUploadTakesNoChunks", testStageNoChunks},
	{"StageSourceChangedStartsOver", testStageSourceChanged},
	{"StageHashMismatch", testStageHashMismatch},
	{"StageSourceShrinks", testStageSourceShrinks},
	{"StageStreamChecksRecord", testStageStreamChecks},
	{"StageBatchCommit", testStageBatch},
	{"StagePlainPath", testStagePlain},
	{"StageVerify", testStageVerify},
	{"StageNameAgainMarksUsed", testStageNameAgainMarksUsed},
	{"StageNameAgainFromAnotherPath", testStageNameAgainFromAnotherPath},
	{"StageSameBytesAtOnceOneUpload", testStageSameBytesAtOnce},
}

// plainBackend hides every optional interface of a backend: the stage sees Backend alone.
type plainBackend struct{ store.Backend }

func (plainBackend) Features() store.Features { return store.Features{} }

// stageChunk is a chunk the backend takes, and a source of a little over two of them.
func stageChunk(b store.Backend) int64 { return max(stage.ChunkLeast(b), 64<<10) }

func sourceFile(t *testing.T, size int64, seed uint64) (string, []byte) {
	t.Helper()
	data := make([]byte, size)
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)})
	r.Read(data)
	path := filepath.Join(t.TempDir(), "src.bin")
	must(t, "write source", os.WriteFile(path, data, 0o600))
	return path, data
}

func uploader(t *testing.T, b store.Backend, opts stage.Options) *stage.Uploader {
	t.Helper()
	if opts.Chunk == 0 {
		opts.Chunk = stageChunk(b)
	}
	u, err := stage.NewUploader(b, opts)
	must(t, "new uploader", err)
	return u
}

func finishedOnly(t *testing.T, b store.Backend, want int) []store.Entry {
	t.Helper()
	l, err := b.List(ctx)
	must(t, "list", err)
	for _, e := range l.Entries {
		if !e.Finished {
			t.Fatalf("unfinished upload %s left in the store: %+v", e.ID, l.Entries)
		}
	}
	if len(l.Entries) != want {
		t.Fatalf("%d uploads in the store, want %d: %+v", len(l.Entries), want, l.Entries)
	}
	return l.Entries
}

func testStageUpload(t *testing.T, h Harness) {
	b := h.New(t)
	path, data := sourceFile(t, 2*stageChunk(b)+1000, 1)
	rec := &manifest.Record{Path: path, Name: "data.bin"}
	must(t, "upload", uploader(t, b, stage.Options{}).Upload(ctx, rec, nil))
	if rec.Upload == nil || rec.Blake3 != sum(data) || rec.Size != int64(len(data)) || rec.Upload.Store != b.Location() {
		t.Fatalf("record after upload: %+v (upload %+v)", rec, rec.Upload)
	}
	if got := readAll(t, b, rec.Upload.ID, "data.bin"); !bytes.Equal(got, data) {
		t.Fatalf("the upload's bytes are not the source's")
	}
	// The same source again, with and without its hash known: named again, no second copy.
	for _, again := range []*manifest.Record{{Path: path, Name: "data.bin"}, {Path: path, Name: "data.bin", Blake3: sum(data)}} {
		must(t, "upload again", uploader(t, b, stage.Options{}).Upload(ctx, again, nil))
		if again.Upload == nil || again.Upload.ID != rec.Upload.ID {
			t.Fatalf("uploaded again as %+v, want %s", again.Upload, rec.Upload.ID)
		}
	}
	finishedOnly(t, b, 1)
}

// interruptAfter uploads rec and cancels once n bytes went through; the upload must say it was
// interrupted and keep what it wrote.
func interruptAfter(t *testing.T, b store.Backend, rec *manifest.Record, n int64) {
	t.Helper()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var seen int64
	u := uploader(t, b, stage.Options{Jobs: 1, Progress: func(k int64) {
		if seen += k; seen >= n {
			cancel()
		}
	}})
	err := u.Upload(cctx, rec, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted upload: %v, want it cancelled", err)
	}
	if rec.Upload != nil {
		t.Fatalf("an interrupted upload set the record's upload: %+v", rec.Upload)
	}
}

func unfinished(t *testing.T, b store.Backend) string {
	t.Helper()
	l, err := b.List(ctx)
	must(t, "list", err)
	if len(l.Entries) != 1 || l.Entries[0].Finished {
		t.Fatalf("after an interrupted upload: %+v, want one unfinished upload", l.Entries)
	}
	return l.Entries[0].ID
}

func testStageResume(t *testing.T, h Harness) {
	b := h.New(t)
	if b.Features().Streamer == nil {
		t.Skip("a backend without a Streamer starts over (the plain path)")
	}
	chunk := stageChunk(b)
	path, data := sourceFile(t, 3*chunk+7, 2)
	interruptAfter(t, b, &manifest.Record{Path: path, Name: "data.bin", Blake3: sum(data)}, chunk)
	id := unfinished(t, b)
	rec := &manifest.Record{Path: path, Name: "data.bin", Blake3: sum(data)}
	var resumedAt []int64 // the stage says where it resumes (a person is told: "resuming at N")
	must(t, "resumed upload", uploader(t, b, stage.Options{Resumed: func(p string, off int64) {
		if p != path {
			t.Errorf("resumed %s, want %s", p, path)
		}
		resumedAt = append(resumedAt, off)
	}}).Upload(ctx, rec, nil))
	if rec.Upload.ID != id {
		t.Fatalf("the rerun made upload %s; the interrupted one, %s, was not resumed", rec.Upload.ID, id)
	}
	// Whether anything was kept depends on the backend (S3 keeps only the parts it finished);
	// what it says it kept is whole chunks, and said once.
	if len(resumedAt) > 1 || len(resumedAt) == 1 && (resumedAt[0] <= 0 || resumedAt[0] >= 3*chunk+7 || resumedAt[0]%chunk != 0) {
		t.Fatalf("resumed at %v, want at most once, at a whole number of chunks", resumedAt)
	}
	if got := readAll(t, b, id, "data.bin"); !bytes.Equal(got, data) {
		t.Fatalf("the resumed upload's bytes are not the source's")
	}
	finishedOnly(t, b, 1)
}

// testStageNoChunks: an upload the stage left unfinished is the stage's to resume (it knows its
// source); a chunk or a finish of the step-by-step upload is refused on it, on every backend, and
// the stage resumes it after.
func testStageNoChunks(t *testing.T, h Harness) {
	b := h.New(t)
	if b.Features().Streamer == nil {
		t.Skip("a backend without a Streamer uploads by the step-by-step upload (the plain path)")
	}
	chunk := stageChunk(b)
	path, data := sourceFile(t, 3*chunk+7, 6)
	interruptAfter(t, b, &manifest.Record{Path: path, Name: "data.bin"}, chunk)
	id := unfinished(t, b)
	st, err := b.Status(ctx, id)
	must(t, "status", err)
	_, err = b.Write(ctx, id, st.Offset, strings.NewReader("x"))
	wantCode(t, "a chunk at the offset of an upload the stage left", err, fault.UploadInvalid)
	if err != nil && !strings.Contains(err.Error(), "written by the upload stage") {
		t.Errorf("the refusal of a chunk does not say why: %v", err)
	}
	_, err = b.Finish(ctx, id, -1, "")
	wantCode(t, "a finish of an upload the stage left", err, fault.UploadInvalid)
	rec := &manifest.Record{Path: path, Name: "data.bin"}
	must(t, "resumed upload", uploader(t, b, stage.Options{}).Upload(ctx, rec, nil))
	if got := readAll(t, b, rec.Upload.ID, "data.bin"); !bytes.Equal(got, data) {
		t.Fatalf("the resumed upload's bytes are not the source's")
	}
}

func testStageSourceChanged(t *testing.T, h Harness) {
	b := h.New(t)
	chunk := stageChunk(b)
	path, _ := sourceFile(t, 3*chunk, 3)
	interruptAfter(t, b, &manifest.Record{Path: path, Name: "data.bin"}, chunk)
	// Same size, other bytes: the rerun must not keep a byte of the old source.
	_, data := sourceFile(t, 3*chunk, 4)
	must(t, "rewrite source", os.WriteFile(path, data, 0o600))
	rec := &manifest.Record{Path: path, Name: "data.bin"}
	must(t, "upload of the changed source", uploader(t, b, stage.Options{}).Upload(ctx, rec, nil))
	if rec.Blake3 != sum(data) {
		t.Fatalf("recorded BLAKE3 %s, the new source's is %s", rec.Blake3, sum(data))
	}
	if got := readAll(t, b, rec.Upload.ID, "data.bin"); !bytes.Equal(got, data) {
		t.Fatalf("the upload mixes the old source with the new")
	}
}

// shrunk is a source file cut short at cut while it is uploaded: it reads as a file of cut bytes.
type shrunk struct {
	*bytes.Reader
	cut int64
}

func (f shrunk) ReadAt(b []byte, off int64) (int, error) {
	if off+int64(len(b)) > f.cut {
		n, _ := f.Reader.ReadAt(b[:max(f.cut-off, 0)], off)
		return n, io.EOF
	}
	return f.Reader.ReadAt(b, off)
}
func (shrunk) Name() string     { return "shrunk.bin" }
func (shrunk) Unchanged() error { return nil }

// A source cut short while it is sent is upload.sourceChanged, the code of a source that moves
// during its upload, whatever part of the write meets the end.
func testStageSourceShrinks(t *testing.T, h Harness) {
	b := h.New(t)
	st := b.Features().Streamer
	if st == nil {
		t.Skip("no Streamer")
	}
	chunk := stageChunk(b)
	_, data := sourceFile(t, 3*chunk, 5)
	src := store.Source{Path: "/shrunk.bin", Name: "data.bin", Size: int64(len(data)), Blake3: sum(data)}
	f := shrunk{bytes.NewReader(data), chunk + chunk/2}
	_, err := st.Stream(ctx, src, f, store.StreamOptions{Chunk: chunk, Jobs: 2})
	wantCode(t, "stream of a source cut short", err, fault.UploadSourceChange)
}

// A Streamer takes the record's BLAKE3 in either case and refuses what is not 64 hex digits, or
// a name that is not plain, before it stores anything: the same on every backend, whoever
// calls it.
func testStageStreamChecks(t *testing.T, h Harness) {
	b := h.New(t)
	st := b.Features().Streamer
	if st == nil {
		t.Skip("no Streamer")
	}
	data := []byte("the record's bytes")
	src := store.Source{Path: "/checks.bin", Name: "data.bin", Size: int64(len(data)), Blake3: strings.ToUpper(sum(data))}
	info, err := st.Stream(ctx, src, shrunk{bytes.NewReader(data), src.Size}, store.StreamOptions{})
	must(t, "stream with the BLAKE3 in upper case", err)
	if info.Blake3 != sum(data) {
		t.Fatalf("upload's BLAKE3 %q, want %q", info.Blake3, sum(data))
	}
	for _, bad := range []store.Source{{Name: "a/b", Blake3: sum(data)}, {Name: "data.bin", Blake3: "xyz"}} {
		bad.Path, bad.Size = "/checks.bin", src.Size
		_, err := st.Stream(ctx, bad, shrunk{bytes.NewReader(data), src.Size}, store.StreamOptions{})
		wantCode(t, "stream of "+bad.Name+" "+bad.Blake3, err, fault.UploadInvalid)
	}
	finishedOnly(t, b, 1)
}

func testStageHashMismatch(t *testing.T, h Harness) {
	b := h.New(t)
	path, _ := sourceFile(t, 1000, 5)
	rec := &manifest.Record{Path: path, Name: "data.bin", Blake3: sum([]byte("something else"))}
	err := uploader(t, b, stage.Options{}).Upload(ctx, rec, nil)
	wantCode(t, "upload of a source that is not the record's BLAKE3", err, fault.UploadHashMismatch)
	if l, err := b.List(ctx); err == nil {
		for _, e := range l.Entries {
			if e.Finished {
				t.Fatalf("a source that failed its hash was finished: %+v", e)
			}
		}
	}
}

func testStageBatch(t *testing.T, h Harness) {
	b := h.New(t)
	batch, err := stage.NewBatch(ctx, b)
	must(t, "new batch", err)
	u := uploader(t, b, stage.Options{Batch: batch})
	var recs []*manifest.Record
	for i := range 3 {
		path, _ := sourceFile(t, 1000+int64(i), uint64(10+i))
		rec := &manifest.Record{Path: path, Name: "f.bin"}
		must(t, "upload in a batch", u.Upload(ctx, rec, nil))
		recs = append(recs, rec)
	}
	u.Settle(recs[0])
	if recs[0].Failed() {
		t.Fatalf("settle: %v", recs[0].Error)
	}
	if _, err := b.Info(ctx, recs[0].Upload.ID); err != nil {
		t.Fatalf("a settled upload is not finished: %v", err)
	}
	must(t, "commit", u.Commit())
	for _, rec := range recs {
		if _, err := b.Info(ctx, rec.Upload.ID); err != nil {
			t.Fatalf("upload %s not finished after the commit: %v", rec.Upload.ID, err)
		}
	}
	finishedOnly(t, b, 3)
}

func testStagePlain(t *testing.T, h Harness) {
	b := plainBackend{h.New(t)}
	path, data := sourceFile(t, 2*stageChunk(b)+3, 6)
	rec := &manifest.Record{Path: path, Name: "data.bin"}
	must(t, "upload through Begin, Write and Finish", uploader(t, b, stage.Options{}).Upload(ctx, rec, nil))
	if got := readAll(t, b, rec.Upload.ID, "data.bin"); !bytes.Equal(got, data) || rec.Blake3 != sum(data) {
		t.Fatalf("the plain path's upload is not the source")
	}
	must(t, "verify", stage.VerifyRecord(ctx, b, rec, nil))
	// A failure in the middle leaves nothing behind.
	bad := &manifest.Record{Path: path, Name: "data.bin", Blake3: sum([]byte("x"))}
	wantCode(t, "plain upload with a wrong hash", uploader(t, b, stage.Options{}).Upload(ctx, bad, nil), fault.UploadHashMismatch)
	finishedOnly(t, b, 1)
}

func testStageVerify(t *testing.T, h Harness) {
	b := h.New(t)
	path, _ := sourceFile(t, 5000, 7)
	rec := &manifest.Record{Path: path, Name: "data.bin"}
	must(t, "upload", uploader(t, b, stage.Options{}).Upload(ctx, rec, nil))
	must(t, "verify record", stage.VerifyRecord(ctx, b, rec, nil))
	if rec.Verified == nil || !rec.Verified.OK || rec.Verified.Blake3 != rec.Blake3 {
		t.Fatalf("verified: %+v", rec.Verified)
	}
	got, err := stage.VerifyID(ctx, b, rec.Upload.ID, nil)
	must(t, "verify id", err)
	if got.Upload == nil || got.Upload.ID != rec.Upload.ID || got.Name != "data.bin" || got.Verified == nil || !got.Verified.OK {
		t.Fatalf("verify id record: %+v", got)
	}
	ids, _, err := stage.VerifyIDs(ctx, b)
	must(t, "verify ids", err)
	if len(ids) != 1 || ids[0] != rec.Upload.ID {
		t.Fatalf("verify --all ids %q, want [%s]", ids, rec.Upload.ID)
	}
	// The source edited since: the source side changed, the upload is intact.
	must(t, "edit source", os.WriteFile(path, []byte("edited"), 0o600))
	err = stage.VerifyRecord(ctx, b, rec, nil)
	wantCode(t, "verify of an edited source", err, fault.VerifyMismatch)
	if rec.Verified == nil || rec.Verified.OK {
		t.Fatalf("verified after the source changed: %+v", rec.Verified)
	}
	// Another store's record is not this store's upload.
	other := *rec
	other.Upload = &manifest.Upload{ID: rec.Upload.ID, Store: b.Location() + "-other"}
	wantCode(t, "touch of another store's record", stage.Touch(ctx, b, &other, now()), fault.UploadMissing)
	must(t, "touch", stage.Touch(ctx, b, rec, now()))
}

// testStageNameAgainMarksUsed: a source whose upload is finished already is named again, and that
// upload is marked used as it is (docs/commands.md, upload), so that a sweep whose cutoff is
// later than its last use keeps the upload the user was just handed; on every backend.
func testStageNameAgainMarksUsed(t *testing.T, h Harness) {
	b := h.New(t)
	path, _ := sourceFile(t, 1000, 3)
	rec := &manifest.Record{Path: path, Name: "data.bin"}
	must(t, "upload", uploader(t, b, stage.Options{}).Upload(ctx, rec, nil))
	before := time.Now().Truncate(time.Second) // a marker keeps at least whole seconds
	again := &manifest.Record{Path: path, Name: "data.bin"}
	must(t, "upload again", uploader(t, b, stage.Options{}).Upload(ctx, again, nil))
	if again.Upload == nil || again.Upload.ID != rec.Upload.ID {
		t.Fatalf("uploaded again as %+v, want %s named again", again.Upload, rec.Upload.ID)
	}
	e := finishedOnly(t, b, 1)[0]
	if e.LastUsed.Before(before) {
		t.Fatalf("named again, its last use is %v (before %v): a sweep with a later cutoff removes the upload just named", e.LastUsed, before)
	}
}

// copyAt writes data as a file of another folder: the same bytes at another path.
func copyAt(t *testing.T, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "copy", "src.bin")
	must(t, "make folder", os.MkdirAll(filepath.Dir(path), 0o700))
	must(t, "write copy", os.WriteFile(path, data, 0o600))
	return path
}

// testStageNameAgainFromAnotherPath: the same bytes uploaded again under the same name find the
// finished upload again from any path (docs/commands.md, upload), with and without the BLAKE3 in
// the record; another name, or other bytes at the same path, are another upload.
func testStageNameAgainFromAnotherPath(t *testing.T, h Harness) {
	b := h.New(t)
	path, data := sourceFile(t, 2*stageChunk(b)+1000, 21)
	rec := &manifest.Record{Path: path, Name: "data.bin"}
	must(t, "upload", uploader(t, b, stage.Options{}).Upload(ctx, rec, nil))
	other := copyAt(t, data)
	for _, again := range []*manifest.Record{{Path: other, Name: "data.bin"}, {Path: other, Name: "data.bin", Blake3: sum(data)}} {
		must(t, "upload from another path", uploader(t, b, stage.Options{}).Upload(ctx, again, nil))
		if again.Upload == nil || again.Upload.ID != rec.Upload.ID {
			t.Fatalf("the same bytes from another path uploaded as %+v, want %s named again", again.Upload, rec.Upload.ID)
		}
	}
	finishedOnly(t, b, 1)
	renamed := &manifest.Record{Path: other, Name: "other.bin"}
	must(t, "upload under another name", uploader(t, b, stage.Options{}).Upload(ctx, renamed, nil))
	if renamed.Upload == nil || renamed.Upload.ID == rec.Upload.ID {
		t.Fatalf("another name named the upload of data.bin again: %+v", renamed.Upload)
	}
	edited := append(bytes.Clone(data), 'x')
	must(t, "edit the copy", os.WriteFile(other, edited, 0o600))
	changed := &manifest.Record{Path: other, Name: "data.bin"}
	must(t, "upload other bytes", uploader(t, b, stage.Options{}).Upload(ctx, changed, nil))
	if changed.Upload == nil || changed.Upload.ID == rec.Upload.ID {
		t.Fatalf("other bytes named the upload of data.bin again: %+v", changed.Upload)
	}
	if got := readAll(t, b, changed.Upload.ID, "data.bin"); !bytes.Equal(got, edited) {
		t.Fatalf("the upload of the edited copy is not its bytes")
	}
	finishedOnly(t, b, 3)
}

// testStageSameBytesAtOnce: two workers of one run (one uploader, with the backend's batch as
// the stage makes one) upload the same bytes under the same name from two paths at the same
// time, and make one upload, which both records name (docs/commands.md, upload). The second
// worker starts once the first has written a chunk, and the first goes on only once the second
// has too, so the two writes overlap on every run whatever the scheduling.
func testStageSameBytesAtOnce(t *testing.T, h Harness) {
	b := h.New(t)
	path, data := sourceFile(t, 2*stageChunk(b)+1000, 22)
	other := copyAt(t, data)
	batch, err := stage.NewBatch(ctx, b)
	must(t, "new batch", err)
	firstWrote, secondWrote := make(chan struct{}), make(chan struct{})
	var once1, once2 sync.Once
	wrote := map[string]func(){
		path: func() {
			once1.Do(func() { close(firstWrote) })
			select { // bounded: a second upload that fails before it writes must not hang the test
			case <-secondWrote:
			case <-time.After(time.Minute):
			}
		},
		other: func() { once2.Do(func() { close(secondWrote) }) },
	}
	recs := []*manifest.Record{{Path: path, Name: "data.bin"}, {Path: other, Name: "data.bin"}}
	errs := make([]error, len(recs))
	var wg sync.WaitGroup
	for i, rec := range recs {
		if i == 1 {
			select {
			case <-firstWrote:
			case <-time.After(time.Minute):
				t.Fatal("the first upload wrote nothing")
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each worker's uploader shares the batch, as the stage's workers do.
			u := uploader(t, b, stage.Options{Batch: batch, Progress: func(k int64) {
				if k > 0 && k < int64(len(data)) {
					wrote[rec.Path]()
				}
			}})
			errs[i] = u.Upload(ctx, rec, nil)
		}()
	}
	wg.Wait()
	u := uploader(t, b, stage.Options{Batch: batch})
	for i, rec := range recs {
		must(t, "upload "+rec.Path, errs[i])
		u.Settle(rec)
		if rec.Failed() {
			t.Fatalf("settle %s: %v", rec.Path, rec.Error)
		}
	}
	must(t, "commit", u.Commit())
	if recs[0].Upload.ID != recs[1].Upload.ID {
		t.Fatalf("the same bytes uploaded at once made two uploads: %s and %s", recs[0].Upload.ID, recs[1].Upload.ID)
	}
	finishedOnly(t, b, 1)
	if got := readAll(t, b, recs[0].Upload.ID, "data.bin"); !bytes.Equal(got, data) {
		t.Fatalf("the one upload is not the source's bytes")
	}
}
