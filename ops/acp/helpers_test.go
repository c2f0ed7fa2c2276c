package acp

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/open"
	"github.com/attachctl/attachctl/ops/store/storetest"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// rsPNG is a valid, incompressible PNG of exactly size bytes: a small image of random pixels
// stored without compression, padded with a private ancillary chunk of random bytes.
func rsPNG(t testing.TB, size int, seed uint64) []byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	img := image.NewNRGBA(image.Rect(0, 0, 16, 12))
	for i := range img.Pix {
		img.Pix[i] = byte(rng.Uint32())
	}
	img.Set(0, 0, color.NRGBA{1, 2, 3, 255})
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.NoCompression}).Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	iend := b[len(b)-12:]
	body := b[:len(b)-12]
	pad := size - len(b) - 12
	if pad < 0 {
		t.Fatalf("a PNG of %d bytes is too small", size)
	}
	chunk := make([]byte, 12+pad)
	binary.BigEndian.PutUint32(chunk, uint32(pad))
	copy(chunk[4:], "paDd")
	storetest.Fill(chunk[8:8+pad], seed)
	binary.BigEndian.PutUint32(chunk[8+pad:], crc32.ChecksumIEEE(chunk[4:8+pad]))
	out := append(append(append([]byte{}, body...), chunk...), iend...)
	if len(out) != size {
		t.Fatalf("made %d bytes, not %d", len(out), size)
	}
	return out
}

// rsWAV is a WAV file's header and n bytes of silence: audio by its content.
func rsWAV(n int) []byte {
	return append([]byte("RIFF\x24\x08\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x44\xac\x00\x00\x88\x58\x01\x00\x02\x00\x10\x00data\x00\x08\x00\x00"), make([]byte, n)...)
}

// rsShots uploads n PNGs of size bytes named like screenshots (name a printf pattern of the index).
func rsShots(t testing.TB, s *localStore, n, size int, name string) []*manifest.Record {
	t.Helper()
	recs := make([]*manifest.Record, n)
	for i := range recs {
		recs[i] = rsPut(t, s, fmt.Sprintf(name, i), "image/png", rsPNG(t, size, uint64(i)))
	}
	return recs
}

// rsBytes is size random bytes: a binary file.
func rsBytes(size int, seed uint64) []byte {
	b := make([]byte, size)
	storetest.Fill(b, seed+1<<32)
	b[0] = 0
	return b
}

// testStore is a new local store in a test's temporary folder, named like a chat, opened as the
// command opens one (ops/store/open) and made as `attachctl store init` makes it.
func testStore(t testing.TB) *localStore {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "chat-1")
	b, err := open.Store(context.Background(), dir, open.Options{})
	if err == nil {
		err = b.Features().Limiter.SetLimits(context.Background(), store.Limits{})
	}
	if err != nil {
		t.Fatal(err)
	}
	return &localStore{b: b, Dir: dir}
}

// localStore is a local store and its folder, for the tests that look at what is on disk.
type localStore struct {
	b   store.Backend
	Dir string
}

// Backend is the store as the command hands it to the stages.
func (s *localStore) Backend() store.Backend { return s.b }

// UploadDir is the folder of a finished upload.
func (s *localStore) UploadDir(id string) string { return filepath.Join(s.Dir, id) }

// rsLocal is the local store s as Uploads, as the command line gives it to Resolve.
func rsLocal(s *localStore) Uploads { return Backend(context.Background(), s.b) }

// rsPut uploads data as name through the store's begin, write and finish, and returns a manifest
// record that names it, as upload would have written it.
func rsPut(t testing.TB, s *localStore, name, mime string, data []byte) *manifest.Record {
	t.Helper()
	ctx := context.Background()
	id, err := s.b.Begin(ctx, name, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.b.Write(ctx, id, 0, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	m, err := s.b.Finish(ctx, id, int64(len(data)), "")
	if err != nil {
		t.Fatal(err)
	}
	rec := &manifest.Record{Path: "/src/" + name, Name: name, Mime: mime, Blake3: m.Blake3,
		Upload: &manifest.Upload{ID: id, Store: s.Dir, Path: s.b.Features().Pather.FinishedPath(id, name)}}
	rec.SetSize(int64(len(data)))
	return rec
}

var (
	rsSchemaOnce sync.Once
	rsSchema     *jsonschema.Schema
	rsSchemaErr  error
)

// rsValidate checks a resolved document (params or JSON-RPC request) against ACP's v1 schema,
// PromptRequest for the params.
func rsValidate(t testing.TB, doc []byte) {
	t.Helper()
	rsSchemaOnce.Do(func() {
		path, _ := filepath.Abs("../../testdata/acp/schema.json")
		f, err := os.Open(path)
		if err != nil {
			rsSchemaErr = err
			return
		}
		defer f.Close()
		sch, err := jsonschema.UnmarshalJSON(f)
		if err != nil {
			rsSchemaErr = err
			return
		}
		c := jsonschema.NewCompiler()
		if rsSchemaErr = c.AddResource("file://"+path, sch); rsSchemaErr != nil {
			return
		}
		rsSchema, rsSchemaErr = c.Compile("file://" + path + "#/$defs/PromptRequest")
	})
	if rsSchemaErr != nil {
		t.Fatal(rsSchemaErr)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil {
		t.Fatalf("output is not a JSON object: %v", err)
	}
	params := doc
	if p, ok := top["params"]; ok {
		if string(top["jsonrpc"]) != `"2.0"` || string(top["method"]) != `"session/prompt"` {
			t.Fatalf("not a session/prompt request: %.200s", doc)
		}
		params = p
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(params))
	if err != nil {
		t.Fatal(err)
	}
	if err := rsSchema.Validate(inst); err != nil {
		t.Fatalf("output does not validate against ACP PromptRequest: %v", err)
	}
}

// rsData is the bytes of rec's finished upload, read from the store.
func rsData(t testing.TB, s *localStore, rec *manifest.Record) []byte {
	t.Helper()
	b, err := os.ReadFile(rec.Upload.Path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// memStore is a store kept in memory (internal/store/mem), for the tests of resolve's own rules
// that need a store, not a local folder. It keeps no file on this machine: resolve over it needs
// a work folder (Options.Workdir) for every file it links.
func memStore(t testing.TB) *storetest.Mem {
	t.Helper()
	return storetest.NewMem("mem://" + t.Name())
}

// inMem is the in-memory store s as Uploads.
func inMem(s *storetest.Mem) Uploads { return Backend(context.Background(), s) }

// memPut uploads data as name to s and returns a manifest record that names it, as upload would
// have written it.
func memPut(t testing.TB, s *storetest.Mem, name, mime string, data []byte) *manifest.Record {
	t.Helper()
	ctx := context.Background()
	id, err := s.Begin(ctx, name, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, id, 0, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	info, err := s.Finish(ctx, id, int64(len(data)), "")
	if err != nil {
		t.Fatal(err)
	}
	rec := &manifest.Record{Path: "/src/" + name, Name: name, Mime: mime, Blake3: info.Blake3,
		Upload: &manifest.Upload{ID: id, Store: s.Location(), Path: s.FinishedURI(id, name)}}
	rec.SetSize(int64(len(data)))
	return rec
}

// memUsed reports whether the upload id of s was ever marked used.
func memUsed(t testing.TB, s *storetest.Mem, id string) bool {
	t.Helper()
	l, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range l.Entries {
		if e.ID == id {
			return !e.LastUsed.IsZero()
		}
	}
	t.Fatalf("upload %s is not in the store", id)
	return false
}
