package acp

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/zeebo/blake3"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// memUploads is a store in memory, for the fuzz target: uploads by id, each with its name and
// bytes, under a made-up local path.
type memUploads struct {
	files  map[string]memFile
	marked int
}

type memFile struct {
	name string
	data []byte
}

func (m *memUploads) Open(id, name string) (*Upload, error) {
	f, ok := m.files[id]
	if !ok || f.name != name {
		return nil, fault.Errorf(fault.UploadMissing, "upload %s: not a finished upload in this store", id)
	}
	sum := blake3.Sum256(f.data)
	return &Upload{ReadCloser: io.NopCloser(bytes.NewReader(f.data)), Size: int64(len(f.data)),
		Blake3: hex.EncodeToString(sum[:]), Path: "/store/" + id + "/" + name}, nil
}

func (m *memUploads) MarkUsed(ids []string, at time.Time) error { m.marked += len(ids); return nil }

// Ids of the fuzz store's uploads.
const (
	fzPNG  = "01890a5d-ac96-774b-bcce-b302099a8051"
	fzWAV  = "01890a5d-ac96-774b-bcce-b302099a8052"
	fzText = "01890a5d-ac96-774b-bcce-b302099a8053"
	fzBin  = "01890a5d-ac96-774b-bcce-b302099a8054"
	fzOdd  = "01890a5d-ac96-774b-bcce-b302099a8055"
)

func fuzzStore(t testing.TB) *memUploads {
	wav := rsWAV(600)
	return &memUploads{files: map[string]memFile{
		fzPNG:  {"shot.png", rsPNG(t, 1500, 1)},
		fzWAV:  {"a.wav", wav},
		fzText: {"notes.md", []byte("# Notes\n<b> & \"q\" \u2028 é\n")},
		fzBin:  {"b.bin", rsBytes(700, 2)},
		fzOdd:  {"two\nlines \\ \".txt", []byte("text\n")},
	}}
}

// fuzzSeeds are prompts for the fuzz target to start from: what prompt writes, resolved output,
// requests, and the attacks of the refusal tests.
func fuzzSeeds() []string {
	ref := func(typ, id, name string) string {
		meta := fmt.Sprintf(`"_meta":{"acpmux":{"upload":{"uploadId":%q,"fileName":%q},"other":1},"k":[1]}`, id, name)
		if typ == "image" {
			return `{"type":"image","mimeType":"image/png","annotations":{"audience":["user"],"priority":0.5},` + meta + `}`
		}
		return fmt.Sprintf(`{"type":"resource_link","uri":"acpmux-upload:%s","name":%q,"title":"T",%s}`, id, name, meta)
	}
	all := ref("image", fzPNG, "shot.png") + "," + ref("link", fzWAV, "a.wav") + "," + ref("link", fzText, "notes.md") + "," +
		ref("link", fzBin, "b.bin") + "," + ref("link", fzOdd, "two\nlines \\ \".txt")
	return []string{
		`{"sessionId":"s","prompt":[{"type":"text","text":"look"},` + all + `]}`,
		`{"jsonrpc":"2.0","id":"r1","method":"session/prompt","params":{"sessionId":"s","_meta":{"t":1},"prompt":[` + all + `]}}`,
		`{"sessionId":"s","prompt":[{"type":"image","mimeType":"image/png","data":"AAAA"},{"type":"resource_link","uri":"file:///x","name":"x","size":3},{"type":"resource","resource":{"uri":"file:///y","text":"t"}},{"type":"text","text":"c","_meta":{"acpmux":{"context":true}}}]}`,
		`{"sessionId":"s","prompt":[` + ref("image", fzPNG, "shot.png") + `,{"type":"text","text":"x","URI":"file:///etc/passwd"}]}`,
		`{"sessionId":"s","prompt":[{"type":"text","text":"x","Type":"resource","resource":{"uri":"file:///etc/passwd","text":"root"}}]}`,
		`{"sessionId":"s","prompt":[{"type":"resource_link","uri":"acpmux-upload:` + fzBin + `","name":"b","_Meta":{}}]}`,
		`{"sessionId":"s","prompt":[` + ref("image", fzBin, "../b.bin") + `]}`,
		`{"sessionId":"s","prompt":[]}`,
	}
}

// FuzzResolve runs resolve's parser and planner over arbitrary input, limits and capabilities: it
// never panics, a refusal carries a code and marks nothing, and every accepted prompt comes out
// as exactly Size bytes that validate against ACP v1's schema and resolve again to themselves.
func FuzzResolve(f *testing.F) {
	for i, s := range fuzzSeeds() {
		f.Add([]byte(s), uint8(i), uint16(3000+i*1000))
	}
	u := fuzzStore(f)
	f.Fuzz(func(t *testing.T, in []byte, caps uint8, limit uint16) {
		opts := Options{
			Caps:         Caps{Image: caps&1 != 0, Audio: caps&2 != 0, EmbeddedContext: caps&4 != 0},
			InlineMax:    int64(caps>>3&3) * 800, // 0 is the default
			InlineBudget: 2500,
			EmbedMax:     int64(caps>>5) * 10,
			MaxMessage:   int64(limit),
			Now:          time.Unix(1e9, 0),
		}
		u.marked = 0
		res, err := Resolve(in, u, opts)
		if err != nil {
			for _, e := range unjoin(err) {
				if fault.CodeOf(e) == "" {
					t.Fatalf("a refusal without a code: %v", e)
				}
			}
			if u.marked != 0 {
				t.Fatal("a refused prompt marked uploads used")
			}
			return
		}
		out, err := res.Bytes()
		if err != nil || int64(len(out)) != res.Size || res.Size > opts.MaxMessage {
			t.Fatalf("%d bytes of %d (limit %d): %v", len(out), res.Size, opts.MaxMessage, err)
		}
		rsValidate(t, out)
		again, err := Resolve(out, u, opts)
		if err != nil {
			t.Fatalf("resolved output refused: %v\n%s", err, out)
		}
		out2, err := again.Bytes()
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("resolving the output changed it:\n%s\n%s", out, out2)
		}
	})
}

// unjoin is the refusals an error joins, or the error itself.
func unjoin(err error) []error {
	var j interface{ Unwrap() []error }
	if errors.As(err, &j) {
		return j.Unwrap()
	}
	return []error{err}
}

// memBackend is the fuzz store behind the backend seam, with or without local paths.
type memBackend struct {
	store.Backend // every method resolve does not call is nil
	m             *memUploads
}

type memReader struct {
	*bytes.Reader
	info *store.Info
}

func (r memReader) Close() error      { return nil }
func (r memReader) Info() *store.Info { return r.info }

func (b memBackend) Open(_ context.Context, id, name string) (store.Reader, error) {
	u, err := b.m.Open(id, name)
	if err != nil {
		return nil, err
	}
	f := b.m.files[id]
	return memReader{bytes.NewReader(f.data), &store.Info{ID: id, Name: name, Size: u.Size, Blake3: u.Blake3}}, nil
}

func (memBackend) Features() store.Features { return store.Features{} }

func (b memBackend) MarkUsed(_ context.Context, ids []string, at time.Time) error {
	return b.m.MarkUsed(ids, at)
}

type memPather struct{ memBackend }

func (b memPather) Features() store.Features { return store.Features{Pather: b} }

func (memPather) FinishedPath(id, name string) string { return "/store/" + id + "/" + name }

// A store behind the backend seam resolves as the same store does directly: by its finished
// paths when it has them (store.Pather), else only through a work folder.
func TestResolveBackend(t *testing.T) {
	in := []byte(fuzzSeeds()[0])
	opts := Options{Caps: Caps{Image: true}}
	direct := fuzzStore(t)
	res, err := Resolve(in, direct, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := rsOutput(t, res)
	res, err = Resolve(in, Backend(context.Background(), memPather{memBackend{m: fuzzStore(t)}}), opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := rsOutput(t, res); !bytes.Equal(got, want) {
		t.Fatalf("through the seam:\n%s\ndirectly:\n%s", got, want)
	}
	noPaths := Backend(context.Background(), memBackend{m: fuzzStore(t)})
	if _, err := Resolve(in, noPaths, opts); fault.CodeOf(err) != fault.UploadUnreadable {
		t.Fatalf("%v, want upload.unreadable without a work folder", err)
	}
	opts.Workdir = t.TempDir()
	res, err = Resolve(in, noPaths, opts)
	if err != nil || res.Copied != 5 { // inline files get their copies too
		t.Fatalf("%v, copied %d", err, res.Copied)
	}
	rsValidate(t, rsOutput(t, res))
}
