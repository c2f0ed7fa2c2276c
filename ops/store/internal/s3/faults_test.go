package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops"
	"github.com/attachctl/attachctl/ops/acp"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/storetest/s3test"
	"github.com/attachctl/attachctl/sweep"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// The S3 store under the faults an operator's infrastructure has (issue 21), each against
// versitygw on loopback; one server for all of them.
func TestFaults(t *testing.T) {
	srv := s3test.Start(t)
	for _, tc := range []struct {
		name string
		f    func(t *testing.T, srv *s3test.Server)
	}{
		{"FinishedButNotCleanedIsFoundAgain", testFinishedNotCleaned},
		{"TwoUploadsOfOneFileAtOnce", testTwoUploadsAtOnce},
		{"AbortedMultipartIsNotWaitedFor", testAbortedNotWaited},
		{"FinishedChunksLeftoverIsFinished", testFinishedChunksLeftover},
		{"LargeStepByStepFinishSendsParts", testLargeChunksFinish},
		{"ConditionalWritesIgnoredAreRefused", testConditionalIgnored},
		{"TransientRefusalsRetried", testTransientRetried},
		{"MidTransferFailureIsUnreachable", testMidTransfer},
		{"SilentServerIsUnreachable", testSilentServer},
		{"StallOfPartsInFlightIsRetried", testStallRetried},
		{"LostAnswerOfCreateOnlyWriteIsOwn", testLostAnswerOwn},
		{"LostAnswerOfLockWriteIsOwn", testLockLostAnswer},
		{"LostAnswerOfMarkerWriteIsOwn", testMarkerLostAnswer},
		{"ForeignMarkerSkippedAndNamed", testForeignMarker},
		{"OrphanTombstoneRemovedByNextSweep", testOrphanTombstone},
		{"SweepLease", testSweepLease},
		{"LimitsLeaseRenewedWhileHeld", testLimitsLease},
		{"SignalledSweepReportsEveryRemoval", testSweepSignalled},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, srv) })
	}
}

// onlyFinished fails unless the store holds exactly n uploads, all finished, and no multipart
// upload is left.
func onlyFinished(t *testing.T, s *Store, n int) {
	t.Helper()
	l, err := s.List(bg)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range l.Entries {
		if !e.Finished {
			t.Fatalf("unfinished upload left: %+v", e)
		}
	}
	if len(l.Entries) != n {
		t.Fatalf("%d uploads in the store, want %d: %+v", len(l.Entries), n, l.Entries)
	}
	if m := multipartCount(t, s); m != 0 {
		mps, _ := objects{s}.Multiparts(bg, "")
		t.Fatalf("%d multipart uploads left: %+v", m, mps)
	}
}

// A run killed between CompleteMultipartUpload and its cleanup leaves the upload finished and its
// info (naming the completed multipart upload) behind: the next upload of the same source names
// that upload, and sends nothing.
func testFinishedNotCleaned(t *testing.T, srv *s3test.Server) {
	s := newStore(t, srv)
	path := randomFile(t, t.TempDir(), "big.bin", MinChunk+1000, 1)
	rec := &manifest.Record{Path: path}
	if err := s.UploadRecord(bg, rec, UploadOptions{Chunk: MinChunk}); err != nil {
		t.Fatal(err)
	}
	id := rec.Upload.ID
	// What the killed run left: the info of the multipart upload it had just completed.
	pi := &partialInfo{Name: "big.bin", Size: MinChunk + 1000, Made: nowString(), UploadID: "completed-already", Blake3: rec.Blake3}
	if err := store.WriteInfo(bg, objects{s}, id, pi, store.AnyVersion); err != nil {
		t.Fatal(err)
	}
	var sent int
	again := &manifest.Record{Path: path}
	if err := s.UploadRecord(bg, again, UploadOptions{Chunk: MinChunk, Sent: func(int32) { sent++ }}); err != nil {
		t.Fatal(err)
	}
	if again.Upload.ID != id || sent != 0 {
		t.Fatalf("the rerun uploaded %s with %d parts sent; want upload %s named again, nothing sent", again.Upload.ID, sent, id)
	}
	onlyFinished(t, s, 1)
}

// A source whose note names a multipart upload that was aborted (by a sweep killed before it
// removed the info, by a bucket's lifecycle rule) is uploaded afresh at once: the object of the
// aborted upload, which never comes, is asked for once, not polled for.
func testAbortedNotWaited(t *testing.T, srv *s3test.Server) {
	s, p := proxied(t, srv, Options{})
	path := randomFile(t, t.TempDir(), "gone.bin", MinChunk+1000, 3)
	want := fileSum(t, path)
	if _, err := s.checkStore(bg, true); err != nil {
		t.Fatal(err)
	}
	note := s.notes.Key("gone.bin", MinChunk+1000, want)
	old, pi, err := s.notes.Start(bg, note, "", "gone.bin", MinChunk+1000, s.beginStage(bg, "gone.bin", MinChunk+1000, want))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.client.AbortMultipartUpload(bg, &awss3.AbortMultipartUploadInput{Bucket: &s.Bucket,
		Key: aws.String(s.FinishedKey(old, "gone.bin")), UploadId: &pi.UploadID}); err != nil {
		t.Fatal(err)
	}
	var heads atomic.Int32
	p.SetFault(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodHead && strings.Contains(r.URL.Path, old) {
			heads.Add(1)
		}
		return false
	})
	rec := &manifest.Record{Path: path}
	if err := s.UploadRecord(bg, rec, UploadOptions{Chunk: MinChunk}); err != nil {
		t.Fatal(err)
	}
	if rec.Upload.ID == old || heads.Load() > 1 {
		t.Fatalf("uploaded as %s after %d HEADs of the aborted upload %s; want a new upload after at most one", rec.Upload.ID, heads.Load(), old)
	}
	if got, _ := objectSum(t, s, rec.Upload.ID, "gone.bin"); got != want {
		t.Fatalf("the new upload hashes to %s, the file to %s", got, want)
	}
}

// A step-by-step finish that publishes and then fails to remove the partial (here the server
// refuses every removal) leaves the partial's info behind: the upload is finished all the same, as
// on the local store, where the publish takes the partial away. A chunk at its end is refused as
// past a finished upload, and an abort refuses it, instead of a chunk appended to the leftover and
// an abort that removes it and says ok.
func testFinishedChunksLeftover(t *testing.T, srv *s3test.Server) {
	s, p := proxied(t, srv, Options{})
	for _, size := range []int64{-1, 5} { // open at begin, fixed by the finish; declared
		leftoverFinished(t, s, p, size)
	}
}

func leftoverFinished(t *testing.T, s *Store, p *s3test.Proxy, size int64) {
	t.Helper()
	id, err := s.Begin(bg, "open.bin", size)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(bg, id, 0, strings.NewReader("hello")); err != nil {
		t.Fatal(err)
	}
	p.SetFault(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodDelete || r.Method == http.MethodPost && r.URL.Query().Has("delete") {
			w.WriteHeader(http.StatusForbidden)
			return true
		}
		return false
	})
	if _, err := s.Finish(bg, id, -1, ""); err != nil {
		t.Fatal(err)
	}
	p.SetFault(nil)
	if _, err := s.readInfo(bg, id); err != nil {
		t.Fatalf("no partial left by the finish (%v): the fault did not hold", err)
	}
	if n, err := s.Write(bg, id, 5, strings.NewReader("more")); fault.CodeOf(err) != fault.UploadOffset || n != 5 {
		t.Fatalf("size %d: a chunk at the end of the finished upload: offset %d, %v; want 5 and upload.offset", size, n, err)
	}
	if err := s.Abort(bg, id); fault.CodeOf(err) != fault.UploadInvalid {
		t.Fatalf("size %d: abort of the finished upload: %v; want upload.invalid", size, err)
	}
	if info, err := s.Info(bg, id); err != nil || info.Size != 5 {
		t.Fatalf("the finished upload: %+v, %v; want its 5 bytes", info, err)
	}
	if _, err := s.readInfo(bg, id); fault.CodeOf(err) != fault.UploadMissing {
		t.Fatalf("the partial is still there once met again: %v", err)
	}
}

// A step-by-step upload larger than one put is finished as a multipart upload of its chunks read
// again, cut into parts of DefaultChunk bytes whatever the chunks' sizes. A part refused leaves
// the upload unfinished and no multipart upload behind; the finish run again publishes it.
func testLargeChunksFinish(t *testing.T, srv *s3test.Server) {
	s, p := proxied(t, srv, Options{})
	data := make([]byte, 2*DefaultChunk+1234)
	for i := range data {
		data[i] = byte(i * 7 / 3)
	}
	sum, _, _ := ops.Hash(bytes.NewReader(data), nil)
	id, err := s.Begin(bg, "big.bin", int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(data); off += 3 << 20 {
		if _, err := s.Write(bg, id, int64(off), bytes.NewReader(data[off:min(off+3<<20, len(data))])); err != nil {
			t.Fatal(err)
		}
	}
	// A chunk that cannot be read back is the upload's fault (upload.unreadable), not the
	// source file's that the write pass of a file upload reads.
	p.SetFault(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, fmt.Sprintf("/c/%020d", 3<<20)) {
			w.WriteHeader(http.StatusBadRequest)
			return true
		}
		return false
	})
	if _, err := s.Finish(bg, id, -1, sum); fault.CodeOf(err) != fault.UploadUnreadable {
		t.Fatalf("finish with a chunk unreadable: %v, want %s", err, fault.UploadUnreadable)
	}
	var parts atomic.Int32
	var refuse atomic.Bool
	refuse.Store(true)
	p.SetFault(func(w http.ResponseWriter, r *http.Request) bool {
		if !r.URL.Query().Has("partNumber") {
			return false
		}
		parts.Add(1)
		if refuse.Load() && r.URL.Query().Get("partNumber") == "2" {
			w.WriteHeader(http.StatusBadRequest)
			return true
		}
		// The other parts reach the server late, after the refusal (a loaded machine): one the
		// client gave up on then must not outlive the multipart upload's abort, as a part the
		// server takes after the abort makes it hold the upload again (versitygw's posix backend).
		if refuse.Load() {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body[:len(body)-1]), slowReader{300 * time.Millisecond}, bytes.NewReader(body[len(body)-1:])))
		}
		return false
	})
	if _, err := s.Finish(bg, id, -1, sum); err == nil {
		t.Fatal("the finish passed with a part refused")
	}
	if n := multipartCount(t, s); n != 0 {
		t.Fatalf("%d multipart uploads left by the failed finish", n)
	}
	parts.Store(0)
	refuse.Store(false)
	info, err := s.Finish(bg, id, -1, sum)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := objectSum(t, s, id, "big.bin"); got != sum || info.Size != int64(len(data)) || parts.Load() != 3 {
		t.Fatalf("finished as %s, %d bytes, after %d part requests; want %s, %d bytes, 3 parts", got, info.Size, parts.Load(), sum, len(data))
	}
	onlyFinished(t, s, 1)
}

// Two uploads of one file at once (two processes: two Stores on one prefix) both succeed, each
// naming an upload that holds the file's bytes, and leave nothing unfinished. Left to timing, the
// second may read the source's note while the first's completion is under way (its multipart
// upload gone, its object not yet there) and make a second copy, the cost store.Notes accepts so
// that an aborted upload is not waited for (testAbortedNotWaited); that they name one upload when
// the second finds the first at work is the conformance suite's StageSameBytesAtOnceOneUpload,
// which orders the two instead of racing them.
func testTwoUploadsAtOnce(t *testing.T, srv *s3test.Server) {
	path := randomFile(t, t.TempDir(), "both.bin", 2*MinChunk+100, 2)
	for round := range 4 {
		a := newStore(t, srv)
		b, err := openURI(bg, a.URI, Options{})
		if err != nil {
			t.Fatal(err)
		}
		recs := []*manifest.Record{{Path: path}, {Path: path}}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, s := range []*Store{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = s.UploadRecord(context.Background(), recs[i], UploadOptions{Chunk: MinChunk, Jobs: 2})
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: upload %d: %v", round, i, err)
			}
		}
		want := fileSum(t, path)
		for i, rec := range recs {
			if got, _ := objectSum(t, a, rec.Upload.ID, "both.bin"); got != want {
				t.Fatalf("round %d: upload %d (%s) holds %s, want %s", round, i, rec.Upload.ID, got, want)
			}
		}
		n := 1
		if recs[0].Upload.ID != recs[1].Upload.ID {
			n = 2 // a completion under way, unseen: a second copy, not a lost one
		}
		t.Logf("round %d: %s %s", round, recs[0].Upload.ID, recs[1].Upload.ID)
		onlyFinished(t, a, n)
	}
}

// proxied opens a fresh store through a proxy in front of srv.
func proxied(t *testing.T, srv *s3test.Server, opts Options) (*Store, *s3test.Proxy) {
	t.Helper()
	p := srv.Proxy(t)
	p.Setenv(t, srv)
	s, err := openURI(bg, srv.URI(fmt.Sprintf("t%d/chat", prefixes.Add(1))), opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, p
}

// A server that ignores If-None-Match and If-Match (the proxy strips them) is refused on the
// prefix's first use with store.unreachable, before anything is written; with
// UnsafeNoConditional it is used, and the mark says so.
func testConditionalIgnored(t *testing.T, srv *s3test.Server) {
	path := randomFile(t, t.TempDir(), "a.bin", 1000, 3)
	s, p := proxied(t, srv, Options{})
	// Through the proxy as it is, the store works: the proxy itself is sound.
	if err := s.UploadRecord(bg, &manifest.Record{Path: path}, UploadOptions{}); err != nil {
		t.Fatalf("upload through the proxy: %v", err)
	}
	p.StripConditions = true
	s2, err := openURI(bg, srv.URI(fmt.Sprintf("t%d/chat", prefixes.Add(1))), Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = s2.UploadRecord(bg, &manifest.Record{Path: path}, UploadOptions{})
	if fault.CodeOf(err) != fault.StoreUnreachable || !strings.Contains(err.Error(), "ignores If-None-Match") {
		t.Fatalf("upload to a server that ignores conditional writes: %v, want store.unreachable naming If-None-Match", err)
	}
	if _, _, _, err := s2.getObject(bg, s2.key(internalDir, store.MarkName)); !notFound(err) {
		t.Fatalf("the refused store was marked: %v", err)
	}
	unsafe, err := openURI(bg, s2.URI, Options{UnsafeNoConditional: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := unsafe.UploadRecord(bg, &manifest.Record{Path: path}, UploadOptions{}); err != nil {
		t.Fatalf("upload with UnsafeNoConditional: %v", err)
	}
	if b, _, _, err := unsafe.getObject(bg, unsafe.key(internalDir, store.MarkName)); err != nil || !strings.Contains(string(b), store.CondUnchecked) {
		t.Fatalf("mark %q (%v): does not say the check was skipped", b, err)
	}
	// A store marked by an earlier version (no check recorded) is checked on its next use.
	p.StripConditions = false
	old, _ := proxied(t, srv, Options{})
	if _, err := old.client.PutObject(bg, &awss3.PutObjectInput{Bucket: &old.Bucket, Key: aws.String(old.key(internalDir, store.MarkName)), Body: strings.NewReader("attachctl store\n")}); err != nil {
		t.Fatal(err)
	}
	if _, err := old.List(bg); err != nil {
		t.Fatal(err)
	}
	if b, _, _, err := old.getObject(bg, old.key(internalDir, store.MarkName)); err != nil || !strings.Contains(string(b), store.CondChecked) {
		t.Fatalf("an old mark %q (%v): not checked and recorded on first use", b, err)
	}
	// An old mark whose limits line was damaged by hand: ls and sweep go on, the mark is left
	// for its owner to mend, and an upload (which needs the limits) fails naming it.
	damaged := "attachctl store\nlimits {\"maxFiles\":\n"
	if _, err := old.client.PutObject(bg, &awss3.PutObjectInput{Bucket: &old.Bucket, Key: aws.String(old.key(internalDir, store.MarkName)), Body: strings.NewReader(damaged)}); err != nil {
		t.Fatal(err)
	}
	again, err := openURI(bg, old.URI, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := again.List(bg); err != nil {
		t.Fatalf("ls of a store whose old mark's limits are damaged: %v", err)
	}
	if b, _, _, err := again.getObject(bg, again.key(internalDir, store.MarkName)); err != nil || string(b) != damaged {
		t.Fatalf("a damaged mark was rewritten as %q (%v)", b, err)
	}
	err = again.UploadRecord(bg, &manifest.Record{Path: path}, UploadOptions{})
	if fault.CodeOf(err) != fault.UploadUnreadable || !strings.Contains(fault.AsError(err, "").Message, "store mark") {
		t.Fatalf("upload into a store whose mark is damaged: %v, want upload.unreadable naming the mark", err)
	}
}

// 5xx answers, throttling, a reset connection and ExistingObjectIsDirectory (versitygw's posix
// backend, when a folder of the layout is being made by another request) are retried.
func testTransientRetried(t *testing.T, srv *s3test.Server) {
	s, p := proxied(t, srv, Options{})
	var mu sync.Mutex
	faults := map[string]int{}
	p.SetFault(func(w http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		defer mu.Unlock()
		kind := r.Method
		if r.URL.Query().Has("partNumber") {
			kind = "part"
		} else if r.URL.Query().Has("uploadId") && r.Method == "POST" {
			kind = "complete"
		}
		faults[kind]++
		switch n := faults[kind]; {
		case kind == "part" && n == 1:
			w.WriteHeader(503)
			io.WriteString(w, `<?xml version="1.0"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
		case kind == "part" && n == 2:
			s3test.Hang(w)
		case kind == "complete" && n == 1:
			w.WriteHeader(409)
			io.WriteString(w, `<?xml version="1.0"?><Error><Code>ExistingObjectIsDirectory</Code><Message>Existing Object is a directory.</Message></Error>`)
		case kind == "GET" && n == 1:
			w.WriteHeader(500)
			io.WriteString(w, `<?xml version="1.0"?><Error><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>`)
		default:
			return false
		}
		return true
	})
	path := randomFile(t, t.TempDir(), "b.bin", 2*MinChunk, 4)
	rec := &manifest.Record{Path: path}
	if err := s.UploadRecord(bg, rec, UploadOptions{Chunk: MinChunk, Jobs: 1}); err != nil {
		t.Fatalf("upload through transient faults: %v", err)
	}
	mu.Lock()
	if faults["part"] < 3 || faults["complete"] < 2 {
		t.Fatalf("faults seen %v: the faults were not all met", faults)
	}
	mu.Unlock()
	if got, _ := objectSum(t, s, rec.Upload.ID, "b.bin"); got != rec.Blake3 {
		t.Fatalf("object hashes to %s, the file to %s", got, rec.Blake3)
	}
}

// A server that dies while an upload is read: store.unreachable with what went wrong, its code
// said once.
func testMidTransfer(t *testing.T, srv *s3test.Server) {
	s, p := proxied(t, srv, Options{MaxAttempts: 1})
	path := randomFile(t, t.TempDir(), "c.bin", 1<<20, 5)
	rec := &manifest.Record{Path: path}
	if err := s.UploadRecord(bg, rec, UploadOptions{}); err != nil {
		t.Fatal(err)
	}
	p.SetFault(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != "GET" || r.Header.Get("Range") == "" || strings.HasPrefix(r.Header.Get("Range"), "bytes=0-") {
			return false
		}
		// The rest of the object: half of it, then the connection goes.
		w.Header().Set("Content-Length", fmt.Sprint(1<<20-headWindow))
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", headWindow, 1<<20-1, 1<<20))
		w.WriteHeader(206)
		w.Write(make([]byte, 100<<10))
		w.(http.Flusher).Flush()
		s3test.Hang(w)
		return true
	})
	r, err := s.Open(bg, rec.Upload.ID, "c.bin")
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(io.Discard, r)
	r.Close()
	if fault.CodeOf(err) != fault.StoreUnreachable || strings.Count(err.Error(), "store.unreachable") != 1 || strings.Count(err.Error(), "upload.unreadable") != 0 {
		t.Fatalf("reading from a server that died: %v, want store.unreachable, said once", err)
	}
	// The same through resolve copying it into a work folder.
	prompt, err := acp.Prompt([]*manifest.Record{rec}, acp.PromptOptions{Session: "s1", Text: "x", HasText: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = acp.Resolve(prompt, acp.Backend(bg, s), acp.Options{Caps: acp.Caps{Image: true}, Workdir: t.TempDir()})
	if fault.CodeOf(err) != fault.StoreUnreachable || strings.Count(err.Error(), "store.unreachable") != 1 || strings.Contains(err.Error(), "upload.unreadable") {
		t.Fatalf("resolve from a server that died: %v, want store.unreachable, said once", err)
	}
}

// A server that accepts connections and never answers: every call is store.unreachable within
// its timeouts (short here; a minute at most with the defaults), and once one call has given up
// the rest do not wait again.
func testSilentServer(t *testing.T, srv *s3test.Server) {
	srv.Setenv(t)
	t.Setenv("AWS_ENDPOINT_URL_S3", s3test.Silent(t))
	s, err := openURI(bg, srv.URI("silent/chat"), Options{ReadTimeout: 200 * time.Millisecond, ConnectTimeout: 200 * time.Millisecond, MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	path := randomFile(t, t.TempDir(), "d.bin", 1000, 6)
	const id = "01900000-0000-7000-8000-000000000000"
	for _, op := range []struct {
		name string
		f    func() error
	}{
		{"list", func() error { _, err := s.List(bg); return err }},
		{"upload", func() error { return s.UploadRecord(bg, &manifest.Record{Path: path}, UploadOptions{}) }},
		{"begin", func() error { _, err := s.Begin(bg, "a.txt", 1); return err }},
		{"status", func() error { _, err := s.Status(bg, id); return err }},
		{"open", func() error { _, err := s.Open(bg, id, "a.txt"); return err }},
		{"mark used", func() error { return s.MarkUsed(bg, []string{id}, time.Now()) }},
		{"sweep", func() error { _, err := s.Sweep(bg, 0, false); return err }},
	} {
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- op.f() }()
		select {
		case err := <-done:
			if fault.CodeOf(err) != fault.StoreUnreachable {
				t.Fatalf("%s on a silent server: %v, want store.unreachable", op.name, err)
			}
			t.Logf("%s: %v after %v", op.name, err, time.Since(start).Round(time.Millisecond))
		case <-time.After(30 * time.Second):
			t.Fatalf("%s on a silent server: still waiting after 30 s", op.name)
		}
	}
}

func uploadN(t *testing.T, s *Store, n int) []string {
	t.Helper()
	var ids []string
	dir := t.TempDir()
	for i := range n {
		rec := &manifest.Record{Path: randomFile(t, dir, fmt.Sprintf("f%d.bin", i), 100+int64(i), uint64(100+i))}
		if err := s.UploadRecord(bg, rec, UploadOptions{}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.Upload.ID)
	}
	return ids
}

func put(t *testing.T, s *Store, key, body string) {
	t.Helper()
	if _, err := s.client.PutObject(bg, &awss3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String(key), Body: strings.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
}

// A .used that is not attachctl's (any machine that resolves can write one) is named and
// skipped, never a stop: ls (List), verify --all (its ids) and sweep carry on.
func testForeignMarker(t *testing.T, srv *s3test.Server) {
	s := newStore(t, srv)
	ids := uploadN(t, s, 2)
	put(t, s, s.usedKey(ids[0]), "garbage")
	const stray = "01900000-0000-7000-8000-0000000000aa"
	put(t, s, s.usedKey(stray), "not a marker either")
	l, err := s.List(bg)
	if err != nil {
		t.Fatalf("list with a foreign marker: %v", err)
	}
	if len(l.Entries) != 2 || l.Entries[0].ID != ids[0] || l.Entries[0].LastUsed.IsZero() {
		t.Fatalf("entries %+v: want both uploads, the first used when its marker was written", l.Entries)
	}
	named := map[string]bool{}
	for _, sk := range l.Skipped {
		named[sk.Path] = true
	}
	// The one beside no upload is no upload: its folder is named, as anything else there that is none.
	if !named["s3://"+s.Bucket+"/"+s.usedKey(ids[0])] || !named["s3://"+s.Bucket+"/"+s.key(stray)+"/"] {
		t.Fatalf("skipped %+v: the foreign markers are not named", l.Skipped)
	}
	if err := s.MarkUsed(bg, []string{ids[0]}, time.Now()); err != nil {
		t.Fatalf("mark used over a foreign marker: %v", err)
	}
	removed, _ := sweepAll(t, s, time.Now().Add(time.Hour))
	if removed != 2 {
		t.Fatalf("sweep removed %d, want both uploads", removed)
	}
	if _, _, _, err := s.getObject(bg, s.usedKey(stray)); err != nil {
		t.Fatalf("the stray marker, not ours, was not left in place: %v", err)
	}
}

// A tombstone with no upload beside it (a sweep killed between the two deletions) is removed by
// the next sweep.
func testOrphanTombstone(t *testing.T, srv *s3test.Server) {
	s := newStore(t, srv)
	uploadN(t, s, 1)
	const orphan = "01900000-0000-7000-8000-0000000000bb"
	if _, err := store.WriteUseMark(bg, objects{s}, orphan, store.UseMark{}, "tombstone", time.Now(), store.ErrSweepKept); err != nil {
		t.Fatal(err)
	}
	if l, err := s.List(bg); err != nil || len(l.Entries) != 1 || len(l.Skipped) != 0 {
		t.Fatalf("listed %+v, %v: want the upload alone, the tombstone neither listed nor named", l, err)
	}
	if _, err := sweep.Remove(bg, s, nil, 0, false, nil); err != nil { // a sweep that removes no upload
		t.Fatal(err)
	}
	if _, _, _, err := s.getObject(bg, s.usedKey(orphan)); !notFound(err) {
		t.Fatalf("the orphaned tombstone is still there after a sweep: %v", err)
	}
}

// The lease: a lock whose lease ran out (its sweep was killed) is broken by the next sweep; one
// that is renewed keeps other sweeps out for as long as its sweep runs; the default is short
// enough for cron.
func testSweepLease(t *testing.T, srv *s3test.Server) {
	if SweepLease > 5*time.Minute {
		t.Fatalf("sweep lease %v: a killed sweep would lock cron out for that long", SweepLease)
	}
	s := newStore(t, srv)
	uploadN(t, s, 1)
	put(t, s, s.lockKey("sweep"), "sweep "+time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano)+"\n")
	sw, err := s.Sweep(bg, 0, false)
	if err != nil {
		t.Fatalf("sweep over an expired lease: %v", err)
	}
	sw.Close()
	put(t, s, s.lockKey("sweep"), "sweep "+time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)+"\n")
	if _, err := s.Sweep(bg, 0, false); fault.CodeOf(err) != fault.StoreLocked {
		t.Fatalf("sweep under a live lease: %v, want store.locked", err)
	}
	s.client.DeleteObject(bg, &awss3.DeleteObjectInput{Bucket: &s.Bucket, Key: aws.String(s.lockKey("sweep"))})

	defer func(l time.Duration) { SweepLease = l }(SweepLease)
	// Short, so that the lease runs out three times within the test, and long enough that a
	// renewal (every quarter of it) is not late under a loaded CI machine's race build: with
	// 400ms, one renewal delayed past the lease let the second sweep in.
	SweepLease = 2 * time.Second
	sw, err = s.Sweep(bg, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * SweepLease) // the lease would have run out three times over without its renewals
	if _, err := s.Sweep(bg, 0, false); fault.CodeOf(err) != fault.StoreLocked {
		t.Fatalf("a second sweep while the first runs past its lease: %v, want store.locked", err)
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	sw, err = s.Sweep(bg, 0, false)
	if err != nil {
		t.Fatalf("sweep after the first closed: %v", err)
	}
	sw.Close()
}

// The limits lock is renewed while it is held, as the sweep lock is: a check of the limits that
// takes longer than the lease (it lists the store, and a large store's listing is many pages)
// keeps other uploads out. Unrenewed, another upload took the lock over in the middle of the
// check, and the first found at its unlock that it had lost it.
func testLimitsLease(t *testing.T, srv *s3test.Server) {
	s := newStore(t, srv)
	if _, err := s.checkStore(bg, true); err != nil {
		t.Fatal(err)
	}
	defer func(l time.Duration) { limitsLease = l }(limitsLease)
	limitsLease = 400 * time.Millisecond
	lk, err := s.lockLimits(bg, 0)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * limitsLease) // the lease would have run out three times over without its renewals
	if err := lockLimits(s, 0); fault.CodeOf(err) != fault.StoreLocked {
		t.Fatalf("the limits lock taken while its holder holds it past its lease: %v, want store.locked", err)
	}
	if held, err := lk.Unlock(bg); err != nil || !held {
		t.Fatalf("the unlock of a lock held past its lease: held %v, %v; want held", held, err)
	}
	if err := lockLimits(s, 0); err != nil {
		t.Fatalf("the limits lock after it was let go: %v", err)
	}
}

// A sweep signalled while it removes: every upload gone was reported, and every upload
// reported is gone.
func testSweepSignalled(t *testing.T, srv *s3test.Server) {
	s, p := proxied(t, srv, Options{})
	ids := uploadN(t, s, 4)
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	var deletes atomic.Int32
	p.SetFault(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == "POST" && r.URL.Query().Has("delete") && deletes.Add(1) == 3 {
			cancel() // the signal comes while the server removes an upload
		}
		return false
	})
	l, err := s.List(bg)
	if err != nil {
		t.Fatal(err)
	}
	sw, err := s.Sweep(ctx, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	reported := map[string]bool{}
	err = sw.Remove(ctx, l.Entries, func(store.Entry) bool { return true }, func(e store.Entry, o store.Outcome, err error) error {
		if o == store.Removed {
			reported[e.ID] = true
		}
		return nil
	})
	sw.Close()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("signalled sweep: %v, want it cancelled", err)
	}
	p.SetFault(nil)
	after, err := s.List(bg)
	if err != nil {
		t.Fatal(err)
	}
	left := map[string]bool{}
	for _, e := range after.Entries {
		left[e.ID] = true
	}
	for _, id := range ids {
		if gone := !left[id]; gone != reported[id] {
			t.Fatalf("upload %s: gone %v, reported %v (reported %v, left %v)", id, gone, reported[id], reported, left)
		}
	}
	if len(reported) == 0 || len(reported) == len(ids) {
		t.Fatalf("reported %d of %d: the signal did not come in the middle", len(reported), len(ids))
	}
}

// A stall that times out two parts in flight at once, each once, is retried: only one request
// that timed out on every attempt makes the rest of the run give up.
func testStallRetried(t *testing.T, srv *s3test.Server) {
	// Three attempts: the stalled one, and two that the server must answer within the read
	// timeout, as must every other request of the upload. The timeout is what a real answer
	// takes at worst, not what a stall takes: a stalled attempt lasts until the client hangs
	// up. Under -race on a 2-core machine at load 60, 300 ms failed the upload in every run
	// (a 5 MiB part, a listing, unanswered on all three attempts).
	s, p := proxied(t, srv, Options{ReadTimeout: 3 * time.Second, MaxAttempts: 3})
	var mu sync.Mutex
	stalled := map[string]bool{}
	p.SetFault(func(w http.ResponseWriter, r *http.Request) bool {
		part := r.URL.Query().Get("partNumber")
		mu.Lock()
		first := part != "" && !stalled[part]
		stalled[part] = true
		mu.Unlock()
		if !first {
			return false
		}
		// The part taken whole (the server sees a client hang up only once the body is read),
		// then no answer until the client gives up on it.
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
		s3test.Hang(w)
		return true
	})
	path := randomFile(t, t.TempDir(), "e.bin", 2*MinChunk, 7)
	rec := &manifest.Record{Path: path}
	if err := s.UploadRecord(bg, rec, UploadOptions{Chunk: MinChunk, Jobs: 2}); err != nil {
		t.Fatalf("upload through a stall of both parts in flight: %v", err)
	}
	if len(stalled) < 2 {
		t.Fatalf("parts stalled %v: want both", stalled)
	}
}

// A silent server is store.unreachable naming the store on every run, whichever of the two
// timeouts of a request that gets no answer fires first (the connection's idle read, or the wait
// for the answer's headers, which Go's transport reports as an error that is also
// context.DeadlineExceeded): 20 runs of 20, each call on a fresh connection whose first error is
// the one returned (one attempt).
func TestSilentServerNamesStoreEveryRun(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL_S3", s3test.Silent(t))
	t.Setenv("AWS_ACCESS_KEY_ID", "silent")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "silent")
	t.Setenv("ATTACHCTL_S3_PATH_STYLE", "1")
	path := randomFile(t, t.TempDir(), "d.bin", 900, 7)
	ops := []struct {
		name string
		f    func(s *Store) error
	}{
		{"upload", func(s *Store) error { return s.UploadRecord(bg, &manifest.Record{Path: path}, UploadOptions{}) }},
		{"limits", func(s *Store) error { _, err := s.quota.Limits(bg); return err }},
		{"list", func(s *Store) error { _, err := s.List(bg); return err }},
	}
	for run := range 20 {
		var wg sync.WaitGroup
		for i, op := range ops {
			s, err := openURI(bg, fmt.Sprintf("s3://attachctl/silent%d-%d/chat", run, i), Options{ReadTimeout: time.Second, ConnectTimeout: time.Second, MaxAttempts: 1})
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := op.f(s)
				if fault.CodeOf(err) != fault.StoreUnreachable || !strings.Contains(err.Error(), "store "+s.URI) {
					t.Errorf("run %d: %s on a silent server: %v (code %q), want store.unreachable naming store %s", run+1, op.name, err, fault.CodeOf(err), s.URI)
				}
			}()
		}
		wg.Wait()
	}
}

// A create-only write the server took whose answer was lost (the connection broke, or the read
// timeout ran out under load) is tried again by the SDK and refused, the object being there: when
// the object is the writer's own (the conditional write check's probe, an upload's reservation,
// the limits lock with its nonce), the refusal is its own earlier attempt, not a failure (the
// probe's check and the reservation failed the upload as store.unreachable, the lock waited out
// its own lease), and not another run's (the source note: the upload was dropped and begun again).
func testLostAnswerOwn(t *testing.T, srv *s3test.Server) {
	for _, tc := range []struct {
		name string
		key  string // a request of this key's first attempt loses its answer
		f    func(s *Store) error
	}{
		{"probe", "/.attachctl/probe-", func(s *Store) error {
			return s.UploadRecord(bg, &manifest.Record{Path: randomFile(t, t.TempDir(), "p.bin", 1000, 8)}, UploadOptions{})
		}},
		{"partial info", "/.attachctl/partial/", func(s *Store) error {
			return s.UploadRecord(bg, &manifest.Record{Path: randomFile(t, t.TempDir(), "i.bin", MinChunk+10, 9)}, UploadOptions{Chunk: MinChunk})
		}},
		{"source note", "/.attachctl/source/", func(s *Store) error {
			return s.UploadRecord(bg, &manifest.Record{Path: randomFile(t, t.TempDir(), "n.bin", 1000, 11)}, UploadOptions{})
		}},
		{"reservation", "/.attachctl/reserved/", func(s *Store) error {
			if err := s.quota.SetLimits(bg, store.Limits{MaxFiles: 5}); err != nil {
				return err
			}
			return s.UploadRecord(bg, &manifest.Record{Path: randomFile(t, t.TempDir(), "r.bin", 1000, 10)}, UploadOptions{})
		}},
		// A chunk of the step-by-step upload: its answer lost, it is the chunk the upload holds
		// and Write gives the offset past it (not upload.offset naming that very offset); the
		// larger one is read back past what a small object's read keeps.
		{"chunk", "/c/", func(s *Store) error { return chunkOwn(s, 1000) }},
		{"large chunk", "/c/", func(s *Store) error { return chunkOwn(s, 1<<20+1000) }},
		{"limits lock", "/.attachctl/limits.lock", func(s *Store) error {
			if err := s.quota.SetLimits(bg, store.Limits{MaxFiles: 5}); err != nil {
				return err
			}
			return lockLimits(s, time.Second)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, p := proxied(t, srv, Options{})
			var lost, begun atomic.Int32
			p.SetLoseAnswer(func(r *http.Request) bool {
				if r.Method == "POST" && r.URL.Query().Has("uploads") {
					begun.Add(1)
				}
				return r.Method == "PUT" && r.Header.Get("If-None-Match") == "*" &&
					strings.Contains(r.URL.Path, tc.key) && lost.Add(1) == 1
			})
			if err := tc.f(s); err != nil {
				t.Fatalf("with the answer of the first create-only write of %s lost: %v", tc.key, err)
			}
			if lost.Load() < 2 {
				t.Fatalf("%d create-only writes of %s: want the lost one and its retry", lost.Load(), tc.key)
			}
			if begun.Load() > 1 {
				t.Fatalf("%d multipart uploads begun with the answer of a create-only write of %s lost: the upload was begun again", begun.Load(), tc.key)
			}
		})
	}
}

// chunkOwn begins a step-by-step upload, writes n bytes as one chunk and finishes it at that
// size: an error when Write gives anything but offset n.
func chunkOwn(s *Store, n int) error {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 7)
	}
	id, err := s.Begin(bg, "c.bin", int64(n))
	if err != nil {
		return err
	}
	off, err := s.Write(bg, id, 0, bytes.NewReader(b))
	if err != nil {
		return err
	}
	if off != int64(n) {
		return fmt.Errorf("offset %d after a chunk of %d bytes", off, n)
	}
	_, err = s.Finish(bg, id, int64(n), "")
	return err
}

// lockLimits takes the limits lock and lets it go: an error when it was not held at its unlock.
func lockLimits(s *Store, wait time.Duration) error {
	lk, err := s.lockLimits(bg, wait)
	if err != nil {
		return err
	}
	held, err := lk.Unlock(bg)
	if err == nil && !held {
		err = errors.New("the lock taken was not held at its unlock")
	}
	return err
}

// Each write of the two lease locks (the sweep lock, the limits lock) whose answer is lost (the
// server took it, the SDK tries again and is refused, the ETag having moved) is found to be the
// holder's own: not a lock held by somebody else (the sweep's own pid named as its holder), and
// not a renewal that lost. Both locks go through one lease; each case is one of its writes (the
// limits lock's create-only write is LostAnswerOfCreateOnlyWriteIsOwn's).
func testLockLostAnswer(t *testing.T, srv *s3test.Server) {
	expired := func(s *Store, key, body string) {
		put(t, s, key, fmt.Sprintf(body, time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano)))
	}
	sweep := func(s *Store) error {
		sw, err := s.Sweep(bg, 0, false)
		if err != nil {
			return err
		}
		return sw.Close()
	}
	var lost atomic.Int32 // the writes the case's predicate saw
	for _, tc := range []struct {
		name, lock string
		cond       string // the condition of the write whose answer is lost
		before     func(s *Store)
		f          func(s *Store) error
	}{
		{"sweep lock taken", "sweep.lock", "If-None-Match", nil, sweep},
		{"sweep lock taken over", "sweep.lock", "If-Match", func(s *Store) { expired(s, s.lockKey("sweep"), "sweep %s\n") }, sweep},
		{"sweep lock renewed", "sweep.lock", "If-Match", nil, func(s *Store) error {
			defer func(l time.Duration) { SweepLease = l }(SweepLease)
			SweepLease = 400 * time.Millisecond
			sw, err := s.Sweep(bg, 0, false)
			if err != nil {
				return err
			}
			for i := 0; lost.Load() < 2 && i < 1000; i++ { // the lost renewal and its retry
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(SweepLease / 2) // the retry answered, and the lease renewed since
			_, err = sw.(*store.ObjectSweeper).Exclude(bg)
			if cerr := sw.Close(); err == nil {
				err = cerr
			}
			return err
		}},
		{"limits lock taken over", "limits.lock", "If-Match", func(s *Store) { expired(s, s.lockKey("limits"), "limits %s 0123456789abcdef\n") },
			func(s *Store) error { return lockLimits(s, 0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, p := proxied(t, srv, Options{})
			if _, err := s.checkStore(bg, true); err != nil {
				t.Fatal(err)
			}
			if tc.before != nil {
				tc.before(s)
			}
			lost.Store(0)
			p.SetLoseAnswer(func(r *http.Request) bool {
				return r.Method == "PUT" && r.Header.Get(tc.cond) != "" &&
					strings.HasSuffix(r.URL.Path, "/.attachctl/"+tc.lock) && lost.Add(1) == 1
			})
			if err := tc.f(s); err != nil {
				t.Fatalf("with the answer of the first %s write of %s lost: %v", tc.cond, tc.lock, err)
			}
			if lost.Load() < 2 {
				t.Fatalf("%d %s writes of %s: want the lost one and its retry", lost.Load(), tc.cond, tc.lock)
			}
			if _, _, _, err := s.getObject(bg, s.key(internalDir, tc.lock)); !notFound(err) {
				t.Fatalf("the lock %s is left after its holder let it go: %v", tc.lock, err)
			}
		})
	}
}

// Each conditional write of a use marker whose answer is lost (the server took it, the SDK tries
// again and is refused: the marker is there, or its ETag moved) is found to be the writer's own,
// by the nonce its body carries, and not a race lost to another writer.
//   - A sweep's tombstone: taken for a use that won, the stale upload was kept with the tombstone
//     left beside it, and every use of it then said a sweep was removing it.
//   - A use's marker where there was none, over an upload a sweep removed between the use's look
//     and its write: taken for a race, the look again found the upload gone and the use said so,
//     but its marker stayed, a marker outliving its upload.
func testMarkerLostAnswer(t *testing.T, srv *s3test.Server) {
	loseFirst := func(p *s3test.Proxy, cond string) *atomic.Int32 {
		var lost atomic.Int32
		p.SetLoseAnswer(func(r *http.Request) bool {
			return r.Method == "PUT" && strings.HasSuffix(r.URL.Path, "/"+store.UsedName) && r.Header.Get(cond) != "" && lost.Add(1) == 1
		})
		return &lost
	}
	for _, cond := range []string{"If-None-Match", "If-Match"} {
		t.Run("tombstone "+cond, func(t *testing.T) {
			s, p := proxied(t, srv, Options{})
			ids := uploadN(t, s, 1)
			if cond == "If-Match" { // a marker to replace
				if err := s.MarkUsed(bg, ids, time.Now().Add(-time.Hour)); err != nil {
					t.Fatal(err)
				}
			}
			lost := loseFirst(p, cond)
			removed, kept := sweepAll(t, s, time.Now().Add(time.Hour))
			if lost.Load() < 2 {
				t.Fatalf("%d %s writes of the marker: want the lost one and its retry", lost.Load(), cond)
			}
			if removed != 1 || kept != 0 {
				t.Fatalf("sweep with the answer of its tombstone's write lost: removed %d, kept %d; want the stale upload removed", removed, kept)
			}
			if _, _, _, err := s.getObject(bg, s.usedKey(ids[0])); !notFound(err) {
				t.Fatalf("the tombstone is left after its upload was removed: %v", err)
			}
		})
	}
	t.Run("use over an upload swept meanwhile", func(t *testing.T) {
		s, p := proxied(t, srv, Options{})
		ids := uploadN(t, s, 1)
		l, err := s.List(bg)
		if err != nil {
			t.Fatal(err)
		}
		var swept atomic.Bool
		p.SetFault(func(w http.ResponseWriter, r *http.Request) bool {
			// What a sweep between the use's look and its write leaves: no upload, no marker.
			if r.Method == "PUT" && strings.HasSuffix(r.URL.Path, "/"+store.UsedName) && swept.CompareAndSwap(false, true) {
				s.deleteKeys(context.Background(), []string{s.FinishedKey(ids[0], l.Entries[0].Name)})
			}
			return false
		})
		lost := loseFirst(p, "If-None-Match")
		if err := s.MarkUsed(bg, ids, time.Now()); fault.CodeOf(err) != fault.UploadMissing {
			t.Fatalf("a use of an upload swept meanwhile: %v, want upload.missing", err)
		}
		if lost.Load() < 2 {
			t.Fatalf("%d create-only writes of the marker: want the lost one and its retry", lost.Load())
		}
		if _, _, _, err := s.getObject(bg, s.usedKey(ids[0])); !notFound(err) {
			t.Fatalf("the use's marker is left beside no upload: %v", err)
		}
	})
}

// slowReader pauses once, then reads as the end.
type slowReader struct{ d time.Duration }

func (r slowReader) Read([]byte) (int, error) {
	time.Sleep(r.d)
	return 0, io.EOF
}
