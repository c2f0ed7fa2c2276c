package s3

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops"
	"github.com/attachctl/attachctl/ops/acp"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/storetest/s3test"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

var bg = context.Background()

// randomFile writes size random bytes (seeded) to a file in dir.
func randomFile(t testing.TB, dir, name string, size int64, seed uint64) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	if _, err := io.CopyN(f, rand.NewChaCha8(key), size); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func fileSum(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sum, _, err := ops.Hash(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// objectSum hashes the finished object as the server gives it back.
func objectSum(t testing.TB, s *Store, id, name string) (string, *store.Info) {
	t.Helper()
	r, err := s.Open(bg, id, name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sum, _, err := ops.Hash(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sum, r.Info()
}

func multipartCount(t testing.TB, s *Store) int {
	t.Helper()
	mps, err := objects{s}.Multiparts(bg, "")
	if err != nil {
		t.Fatal(err)
	}
	return len(mps)
}

func TestUploadStage(t *testing.T) {
	srv := s3test.Start(t)
	s := newStore(t, srv)
	dir := t.TempDir()
	tests := []struct {
		name  string
		size  int64
		chunk int64
		jobs  int
		sniff bool // the record carries its BLAKE3, as after sniff
	}{
		{"empty.bin", 0, MinChunk, 2, false},
		{"small.txt", 1000, MinChunk, 2, true},
		{"one-part.bin", MinChunk, MinChunk, 4, false},
		{"parts.bin", 3*MinChunk + 12345, MinChunk, 3, true},
		{"parts-1job.bin", 2*MinChunk + 1, MinChunk, 1, false},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := randomFile(t, dir, tc.name, tc.size, uint64(i))
			want := fileSum(t, path)
			rec := &manifest.Record{Path: path}
			if tc.sniff {
				rec.Blake3 = want
			}
			var sent atomic.Int32
			opts := UploadOptions{Chunk: tc.chunk, Jobs: tc.jobs, Sent: func(int32) { sent.Add(1) }}
			if err := s.UploadRecord(bg, rec, opts); err != nil {
				t.Fatal(err)
			}
			if rec.Upload == nil || rec.Blake3 != want || rec.Name != tc.name || rec.Upload.Store != s.URI ||
				rec.Upload.Path != s.FinishedURI(rec.Upload.ID, tc.name) {
				t.Fatalf("record after upload: %+v %+v", rec, rec.Upload)
			}
			if n := int64(sent.Load()); n != (tc.size+tc.chunk-1)/tc.chunk {
				t.Fatalf("%d parts sent for %d bytes in parts of %d", n, tc.size, tc.chunk)
			}
			got, info := objectSum(t, s, rec.Upload.ID, tc.name)
			if got != want || info.Blake3 != want || info.Size != tc.size {
				t.Fatalf("object hashes to %s (metadata %s, %d bytes); the file to %s, %d bytes", got, info.Blake3, info.Size, want, tc.size)
			}
			// The same file again is the same upload, and nothing is sent.
			again := &manifest.Record{Path: path}
			sent.Store(0)
			if err := s.UploadRecord(bg, again, opts); err != nil {
				t.Fatal(err)
			}
			if again.Upload.ID != rec.Upload.ID || sent.Load() != 0 {
				t.Fatalf("second upload: id %s (first %s), %d parts sent", again.Upload.ID, rec.Upload.ID, sent.Load())
			}
		})
	}
	if n := multipartCount(t, s); n != 0 {
		t.Fatalf("%d multipart uploads left", n)
	}
	rec := &manifest.Record{Path: filepath.Join(dir, "parts.bin")}
	if err := s.UploadRecord(bg, rec, UploadOptions{Chunk: MinChunk - 1}); fault.CodeOf(err) != fault.UploadInvalid {
		t.Fatalf("a chunk under S3's smallest part: %v", err)
	}
}

// TestHelperUpload is not a test: the kill test runs the test binary as an upload it can kill.
// It prints "sent N" before it sends part N.
func TestHelperUpload(t *testing.T) {
	path := os.Getenv("ATTACHCTL_S3_HELPER_FILE")
	if path == "" {
		t.Skip("run by TestUploadKilled")
	}
	s, err := openURI(bg, os.Getenv("ATTACHCTL_S3_HELPER_STORE"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	chunk, _ := strconv.ParseInt(os.Getenv("ATTACHCTL_S3_HELPER_CHUNK"), 10, 64)
	var mu sync.Mutex
	rec := &manifest.Record{Path: path, Blake3: os.Getenv("ATTACHCTL_S3_HELPER_BLAKE3")}
	err = s.UploadRecord(bg, rec, UploadOptions{Chunk: chunk, Jobs: 4, Sent: func(n int32) {
		mu.Lock()
		fmt.Printf("sent %d\n", n)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("id %s\n", rec.Upload.ID)
}

// TestUploadKilled kills an upload with SIGKILL at random moments and runs it again each time:
// every run sends only parts the server does not hold, and the last one finishes the object with
// the file's BLAKE3 and leaves no multipart upload. ATTACHCTL_S3_LONG=1 makes it the issue's
// run: a 1 GiB file killed 10 times.
func TestUploadKilled(t *testing.T) {
	if os.Getenv("ATTACHCTL_S3_HELPER_FILE") != "" {
		t.Skip("in the helper")
	}
	srv := s3test.Start(t)
	s := newStore(t, srv)
	size, kills, chunk := int64(64<<20), 3, int64(MinChunk)
	if os.Getenv("ATTACHCTL_S3_LONG") == "1" {
		size, kills, chunk = 1<<30, 10, DefaultChunk
	}
	path := randomFile(t, t.TempDir(), "big.bin", size, 42)
	want := fileSum(t, path)
	nparts := int((size + chunk - 1) / chunk)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	var id string
	sentTotal := 0
	for run := 0; ; run++ {
		held := s.heldParts(t, path, want, chunk)
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperUpload$", "-test.v")
		cmd.Env = append(os.Environ(), "ATTACHCTL_S3_HELPER_FILE="+path, "ATTACHCTL_S3_HELPER_STORE="+s.URI,
			"ATTACHCTL_S3_HELPER_CHUNK="+strconv.FormatInt(chunk, 10), "ATTACHCTL_S3_HELPER_BLAKE3="+want)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill after a random number of the parts still missing were started.
		killAt := -1
		if run < kills {
			killAt = 1 + rng.IntN(max(1, nparts-len(held)-1))
		}
		sc := bufio.NewScanner(out)
		n := 0
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "sent "); ok {
				p, _ := strconv.Atoi(v)
				if held[int32(p)] {
					t.Errorf("run %d sent part %d, which the server already held", run, p)
				}
				n++
				if n == killAt {
					cmd.Process.Signal(syscall.SIGKILL)
				}
			}
			if v, ok := strings.CutPrefix(line, "id "); ok {
				id = v
			}
		}
		err = cmd.Wait()
		sentTotal += n
		if run < kills && n >= killAt && err == nil {
			t.Logf("run %d finished before its kill", run)
		}
		if err == nil {
			t.Logf("run %d finished: %d parts sent in all runs for %d parts", run, sentTotal, nparts)
			break
		}
		if run > kills {
			t.Fatalf("run %d failed: %v", run, err)
		}
	}
	got, info := objectSum(t, s, id, "big.bin")
	if got != want || info.Blake3 != want {
		t.Fatalf("object hashes to %s (metadata %s), the file to %s", got, info.Blake3, want)
	}
	if n := multipartCount(t, s); n != 0 {
		t.Fatalf("%d multipart uploads left after the finish", n)
	}
	if sentTotal > nparts+4*(kills) {
		t.Fatalf("%d parts sent for %d parts and %d kills at 4 in flight", sentTotal, nparts, kills)
	}
}

// heldParts is what the server holds of the upload of path that is in progress, and holds whole:
// a part cut off by the kill may be there with fewer bytes (or other ones), and is sent again.
func (s *Store) heldParts(t testing.TB, path, want string, chunk int64) map[int32]bool {
	t.Helper()
	abs, _ := filepath.Abs(path)
	f, err := os.Open(abs)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	id, _ := s.notes.Read(bg, s.notes.Key(filepath.Base(abs), fi.Size(), want))
	got := map[int32]bool{}
	pi, _ := s.readInfo(bg, id)
	if pi == nil || pi.Blake3 != want {
		return got
	}
	held, _ := s.partsHeld(bg, id, pi)
	for n, p := range held {
		buf := make([]byte, p.Size)
		_, err := f.ReadAt(buf, int64(n-1)*chunk)
		if (err == nil || err == io.EOF && p.Size == fi.Size()-int64(n-1)*chunk) && (partUpload{}).Tag(buf) == p.Tag {
			got[n] = true
		}
	}
	return got
}

// TestUploadServerRestart stops the server in the middle of an upload: the upload fails with
// store.unreachable and the server's words; the server starts again and the same upload resumes
// from the parts it holds and completes.
func TestUploadServerRestart(t *testing.T) {
	srv := s3test.Start(t)
	s := newStore(t, srv)
	s2, err := openURI(bg, s.URI, Options{MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	path := randomFile(t, t.TempDir(), "video.bin", 8*MinChunk, 7)
	want := fileSum(t, path)
	var once sync.Once
	var sent atomic.Int32
	err = s2.UploadRecord(bg, &manifest.Record{Path: path, Blake3: want}, UploadOptions{Chunk: MinChunk, Jobs: 1, Sent: func(n int32) {
		if sent.Add(1) == 4 {
			once.Do(srv.Stop)
		}
	}})
	if fault.CodeOf(err) != fault.StoreUnreachable {
		t.Fatalf("upload with the server stopped: %v, want store.unreachable", err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	held := s.heldParts(t, path, want, MinChunk)
	if len(held) != 3 {
		t.Fatalf("the server holds %d parts after 3 were sent and the 4th cut off", len(held))
	}
	rec := &manifest.Record{Path: path, Blake3: want}
	sent.Store(0)
	if err := s.UploadRecord(bg, rec, UploadOptions{Chunk: MinChunk, Jobs: 2, Sent: func(int32) { sent.Add(1) }}); err != nil {
		t.Fatal(err)
	}
	if sent.Load() != 5 {
		t.Fatalf("the resume sent %d parts; 5 were missing", sent.Load())
	}
	if got, _ := objectSum(t, s, rec.Upload.ID, "video.bin"); got != want {
		t.Fatalf("object hashes to %s, the file to %s", got, want)
	}
}

// pngOf is size bytes that open as a PNG: its signature and a 16x12 IHDR (the resolver tells
// images by their magic number, and sends inline only one whose header parses), then random
// bytes.
func pngOf(size int, seed uint64) []byte {
	b := make([]byte, size)
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	rand.NewChaCha8(key).Read(b)
	ihdr := []byte("IHDR\x00\x00\x00\x10\x00\x00\x00\x0c\x08\x06\x00\x00\x00")
	head := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0d"), ihdr...)
	copy(b, binary.BigEndian.AppendUint32(head, crc32.ChecksumIEEE(ihdr)))
	return b
}

type block struct {
	Type string `json:"type"`
	Text string `json:"text"`
	Data string `json:"data"`
	URI  string `json:"uri"`
}

// TestResolveFiftyWorkingCopies resolves 50 screenshots of 800 KiB from the S3 store: 12 inline,
// 38 by path to working copies whose bytes match, read-only; a second resolve reuses the copies,
// and a copy that was changed is fetched again.
func TestResolveFiftyWorkingCopies(t *testing.T) {
	srv := s3test.Start(t)
	s := newStore(t, srv)
	dir, work := t.TempDir(), t.TempDir()
	const n, size = 50, 819200
	srcs := make([][]byte, n)
	recs := make([]*manifest.Record, n)
	for i := range recs {
		srcs[i] = pngOf(size, uint64(i))
		path := filepath.Join(dir, fmt.Sprintf("shot-%02d.png", i))
		if err := os.WriteFile(path, srcs[i], 0o600); err != nil {
			t.Fatal(err)
		}
		recs[i] = &manifest.Record{Path: path, Mime: "image/png", Kind: "image"}
		if err := s.UploadRecord(bg, recs[i], UploadOptions{Jobs: 2}); err != nil {
			t.Fatal(err)
		}
	}
	prompt, err := acp.Prompt(recs, acp.PromptOptions{Session: "s1", Text: "What changed?", HasText: true})
	if err != nil {
		t.Fatal(err)
	}
	resolve := func() ([]block, map[string]time.Time) {
		res, err := acp.Resolve(prompt, acp.Backend(bg, s), acp.Options{Caps: acp.Caps{Image: true}, Workdir: work})
		if err != nil {
			t.Fatal(err)
		}
		if res.Inline != 12 || res.ByPath != 38 {
			t.Fatalf("inline %d, by path %d; want 12 and 38", res.Inline, res.ByPath)
		}
		out, err := res.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		var doc struct{ Prompt []block }
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Fatal(err)
		}
		// The text block before each inline image names it (docs/resolve.md): set aside here.
		var kept []block
		for i, b := range doc.Prompt {
			if b.Type == "text" && i+1 < len(doc.Prompt) && doc.Prompt[i+1].Type == "image" && strings.HasPrefix(b.Text, "Image ") {
				continue
			}
			kept = append(kept, b)
		}
		doc.Prompt = kept
		mtimes := map[string]time.Time{}
		for i := 0; i < n; i++ {
			b := doc.Prompt[1+i]
			if i < 12 {
				data, err := base64.StdEncoding.DecodeString(b.Data)
				if b.Type != "image" || err != nil || !bytes.Equal(data, srcs[i]) {
					t.Fatalf("block %d: not the inline image", i)
				}
				continue
			}
			p := strings.TrimPrefix(b.URI, "file://")
			if b.Type != "resource_link" || !strings.HasPrefix(p, work+"/") {
				t.Fatalf("block %d: %s %s, want a link into the working folder %s", i, b.Type, b.URI, work)
			}
			got, err := os.ReadFile(p)
			if err != nil || !bytes.Equal(got, srcs[i]) {
				t.Fatalf("block %d: working copy differs from the source (%v)", i, err)
			}
			fi, _ := os.Stat(p)
			if fi.Mode().Perm() != 0o400 {
				t.Fatalf("working copy %s has mode %v, want read-only", p, fi.Mode())
			}
			mtimes[p] = fi.ModTime()
		}
		return doc.Prompt, mtimes
	}
	blocks, first := resolve()
	c := countRequests(s)
	_, second := resolve()
	// The second resolve: one listing looks every upload up, one GET each examines it (and the
	// inline ones are read again to be sent), one conditional PUT each marks it used.
	got := c.take()
	if got["ListObjectsV2"] != 1 || got["PutObject"] != 50 || got["GetObject"] > 50+2*12 || got["HeadObject"] > 1 {
		t.Fatalf("requests of a resolve with every copy in place: %v", got)
	}
	for p, m := range first {
		if !second[p].Equal(m) {
			t.Fatalf("second resolve fetched %s again", p)
		}
	}
	// Every upload is marked used on the server.
	l, err := s.List(bg)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range l.Entries {
		if e.LastUsed.IsZero() {
			t.Fatalf("upload %s not marked used", e.ID)
		}
	}
	// A copy the agent changed is never overwritten (docs/resolve.md, --workdir): it stays, and the
	// link still names it.
	p := strings.TrimPrefix(blocks[1+20].URI, "file://")
	os.Chmod(p, 0o600)
	changed := []byte("\x89PNG\r\n\x1a\nchanged")
	os.WriteFile(p, changed, 0o600)
	res, err := acp.Resolve(prompt, acp.Backend(bg, s), acp.Options{Caps: acp.Caps{Image: true}, Workdir: work})
	if err != nil {
		t.Fatal(err)
	}
	out, err := res.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, changed) {
		t.Fatalf("the changed copy %s was overwritten (%v)", p, err)
	}
	if !bytes.Contains(out, []byte(`"file://`+p+`"`)) {
		t.Fatalf("the resolved prompt does not link the changed copy %s", p)
	}
	// A swept upload is refused as upload.missing, and nothing stale is handed out.
	sweepAll(t, s, time.Now().Add(time.Hour))
	if _, err := acp.Resolve(prompt, acp.Backend(bg, s), acp.Options{Caps: acp.Caps{Image: true}, Workdir: work}); fault.CodeOf(err) != fault.UploadMissing {
		t.Fatalf("resolve after a sweep: %v, want upload.missing", err)
	}
}

// sweepAll removes every upload made and last used before cutoff.
func sweepAll(t testing.TB, s *Store, cutoff time.Time) (removed, kept int) {
	t.Helper()
	l, err := s.List(bg)
	if err != nil {
		t.Fatal(err)
	}
	stale := func(e store.Entry) bool { return e.Made.Before(cutoff) && e.LastUsed.Before(cutoff) }
	sw, err := s.Sweep(bg, time.Minute, false)
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	err = sw.Remove(bg, l.Entries, stale, func(e store.Entry, o store.Outcome, err error) error {
		switch o {
		case store.Removed:
			removed++
		case store.Kept:
			kept++
		case store.Failed:
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return removed, kept
}

// TestUseSweepRace runs uses (MarkUsed) against sweeps with a cutoff of now. Half the uploads are
// used into the future: once a use of one succeeded, no sweep may remove it. The others are used
// now, so each sweep may take them; a use that then finds one missing uploads another file and
// goes on with it. When it is over no marker is left without its upload. ATTACHCTL_S3_LONG=1 runs
// it for 60 s.
func TestUseSweepRace(t *testing.T) {
	srv := s3test.Start(t)
	s := newStore(t, srv)
	dir := t.TempDir()
	var ids []string
	for i := 0; i < 6; i++ {
		rec := &manifest.Record{Path: randomFile(t, dir, fmt.Sprintf("f%d.txt", i), 100, uint64(i))}
		if err := s.UploadRecord(bg, rec, UploadOptions{}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.Upload.ID)
	}
	dur := 3 * time.Second
	if os.Getenv("ATTACHCTL_S3_LONG") == "1" {
		dur = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(bg, dur)
	defer cancel()
	var mu sync.Mutex
	usedAt := map[string]time.Time{} // last successful use of each id
	var uses, missing, removed, kept atomic.Int64
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				// Half the uploads are used into the future: no sweep with a cutoff of now may
				// take them once a use succeeded. The others are used now, and go stale at once.
				at := time.Now()
				if i%2 == 0 {
					at = at.Add(time.Hour)
				}
				err := s.MarkUsed(bg, []string{id}, at)
				switch fault.CodeOf(err) {
				case "":
					uses.Add(1)
					mu.Lock()
					usedAt[id] = at
					mu.Unlock()
				case fault.UploadMissing:
					missing.Add(1)
					if i%2 == 0 {
						return // swept before its first use succeeded
					}
					// Swept after a use now: upload another file and go on using it.
					rec := &manifest.Record{Path: randomFile(t, dir, fmt.Sprintf("f%d-%d.txt", i, missing.Load()), 100, uint64(1000+missing.Load()))}
					if err := s.UploadRecord(bg, rec, UploadOptions{}); err != nil {
						t.Error(err)
						return
					}
					id = rec.Upload.ID
				default:
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			l, err := s.List(bg)
			if err != nil {
				t.Error(err)
				return
			}
			sw, err := s.Sweep(bg, time.Minute, false)
			if err != nil {
				t.Error(err)
				return
			}
			now := time.Now()
			err = sw.Remove(bg, l.Entries, func(e store.Entry) bool { return e.Made.Before(now) && e.LastUsed.Before(now) },
				func(e store.Entry, o store.Outcome, err error) error {
					switch o {
					case store.Removed:
						mu.Lock()
						at, used := usedAt[e.ID]
						mu.Unlock()
						if used && at.After(now) {
							t.Errorf("upload %s removed after a use that marked it past the cutoff", e.ID)
						}
						removed.Add(1)
					case store.Kept:
						kept.Add(1)
					case store.Failed:
						return err
					}
					return nil
				})
			sw.Close()
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	wg.Wait()
	// No marker without its upload.
	err := s.listObjects(bg, s.root(), func(o types.Object) error {
		k := aws.ToString(o.Key)
		if id, ok := strings.CutSuffix(strings.TrimPrefix(k, s.root()), "/"+store.UsedName); ok {
			l, err := s.up.WalkID(bg, id)
			if err != nil {
				return err
			}
			if name, _ := l.Read().Finished(); name == "" {
				t.Errorf("marker %s left without its upload", k)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v: %d uses, %d refused as missing, %d removed, %d kept", dur, uses.Load(), missing.Load(), removed.Load(), kept.Load())
}

// TestRefuseKeepsAnotherRunsNote: a run whose bytes are not what its record names drops its own
// upload, and the source note only while the note still names that upload: another run of the
// same source may have taken it over meanwhile, and its resume depends on it.
func TestRefuseKeepsAnotherRunsNote(t *testing.T) {
	srv := s3test.Start(t)
	s := newStore(t, srv)
	if _, err := s.checkStore(bg, true); err != nil {
		t.Fatal(err)
	}
	src := store.Source{Path: "/a/a.bin", Name: "a.bin", Size: 10, Blake3: strings.Repeat("ab", 32)}
	key := s.notes.Key(src.Name, src.Size, src.Blake3)
	_, w, err := s.StartStream(bg, store.StreamStart{Src: src})
	if err != nil {
		t.Fatal(err)
	}
	mine := w.ID()
	other, _ := store.NewID()
	for _, c := range []struct{ holder, want string }{{other, other}, {mine, ""}} {
		if _, err := (objects{s}).Put(bg, key, store.AnyVersion, []byte(`{"id":"`+c.holder+`"}`)); err != nil {
			t.Fatal(err)
		}
		w.Refuse(bg, "")
		if got, _ := s.notes.Read(bg, key); got != c.want {
			t.Errorf("note naming %s after the refusal of %s: names %q, want %q", c.holder, mine, got, c.want)
		}
	}
}
