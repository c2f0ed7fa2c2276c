package acp

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest"
)

// flatPNG is a real w×h PNG of one colour with a dark line: it decodes, and compresses to little.
func flatPNG(t testing.TB, w, h int) []byte {
	t.Helper()
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(m.Pix); i += 4 {
		m.Pix[i], m.Pix[i+1], m.Pix[i+2], m.Pix[i+3] = 240, 240, 245, 255
	}
	for x := 0; x < w; x++ {
		m.SetNRGBA(x, h/2, color.NRGBA{20, 20, 20, 255})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// jpegHeaderOnly is a JPEG whose header says w×h and whose scan is garbage: its header parses,
// a decoder fails on it.
func jpegHeaderOnly(w, h int) []byte {
	b := []byte{0xFF, 0xD8}
	// SOF0: 8-bit, h×w, one component.
	b = append(b, 0xFF, 0xC0, 0, 11, 8, byte(h>>8), byte(h), byte(w>>8), byte(w), 1, 1, 0x11, 0)
	b = append(b, 0xFF, 0xDA, 0, 8, 1, 1, 0, 0, 63, 0) // SOS with no Huffman table defined
	b = append(b, bytes.Repeat([]byte{0x5A}, 4000)...)
	return append(b, 0xFF, 0xD9)
}

// inlineDims decodes the header of an inline block's data.
func inlineDims(t *testing.T, data string) (int, int, string) {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		t.Fatal(err)
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("inline data does not decode: %v", err)
	}
	return cfg.Width, cfg.Height, format
}

// rsContextCount fails the test unless the context block (the resolved prompt's last block) says
// want n times.
func rsContextCount(t *testing.T, blocks []rsBlock, want string, n int) {
	t.Helper()
	ctx := blocks[len(blocks)-1].Text
	// n files sharing a reason are listed under it, said once (context.go).
	grouped := fmt.Sprintf("\n%d files by path: %s:", n, strings.TrimPrefix(want, "by path, "))
	if n >= sharedMin && strings.Count(ctx, grouped) == 1 && strings.Count(ctx, want) == 0 {
		return
	}
	if strings.Count(ctx, want) != n {
		t.Fatalf("the context block does not say %q %d times:\n%s", want, n, ctx)
	}
}

// The providers' published formulas (docs/resolve.md).
func TestImageTokens(t *testing.T) {
	for _, c := range []struct {
		model string
		w, h  int
		want  int64
	}{
		// Anthropic: w×h/750, after scaling to 1568 px a side and about 1600 tokens.
		{"anthropic", 1000, 1000, 1333},
		{"anthropic", 200, 200, 53},
		{"anthropic", 1092, 1092, 1590},
		{"anthropic", 1568, 784, 1599}, // 1639 as it is: scaled to about 1600
		{"anthropic", 9000, 6000, 1598},
		// OpenAI, GPT-5 family: 70 + 140 a 512 px tile, after fitting 2048 and a 768 px short side.
		{"openai", 1024, 1024, 70 + 140*4},
		{"openai", 2048, 4096, 70 + 140*6},
		{"openai", 512, 512, 70 + 140*1},
		{"openai", 100, 100, 70 + 140*1},
		// Gemini: 258 at most 384 px both sides, else 258 a 768×768 tile.
		{"gemini", 384, 384, 258},
		{"gemini", 385, 100, 258},
		{"gemini", 1000, 1000, 258 * 4},
		{"gemini", 1536, 768, 258 * 2},
		{"gemini", 4000, 2500, 258 * 6 * 4},
	} {
		if got := ImageTokens(FindModel(c.model), c.w, c.h); got != c.want {
			t.Errorf("%s %d×%d: %d tokens, want %d", c.model, c.w, c.h, got, c.want)
		}
	}
	if ImageTokens(nil, 100, 100) != 0 || ImageTokens(FindModel("anthropic"), 0, 10) != 0 {
		t.Fatal("no model or no size: an estimate")
	}
}

// Only an image whose header parses to a pixel size goes inline: a PNG signature followed by
// garbage goes by path with the reason, whatever the layers say.
func TestResolveUndecodableHeader(t *testing.T) {
	s := testStore(t)
	bad := rsPut(t, s, "bad.png", "image/png", append([]byte("\x89PNG\r\n\x1a\n"), rsBytes(3000, 9)...))
	good := rsPut(t, s, "good.png", "image/png", flatPNG(t, 40, 30))
	for _, opts := range []Options{
		{Caps: Caps{Image: true}},
		{Caps: Caps{Image: true}, Adapter: FindAdapter("claude-agent-acp"), Model: FindModel("anthropic")},
	} {
		res, err := Resolve(rsPrompt(t, []*manifest.Record{bad, good}, ""), rsLocal(s), opts)
		if err != nil {
			t.Fatal(err)
		}
		blocks := rsBlocks(t, rsOutput(t, res))
		if res.Inline != 1 || blocks[0].Type != "resource_link" || blocks[1].Type != "image" {
			t.Fatalf("%d inline: %+v", res.Inline, blocks)
		}
		if ctx := blocks[len(blocks)-1].Text; !strings.Contains(ctx, "bad.png (image/png, 3008 bytes): by path, its header does not parse") ||
			!strings.Contains(ctx, "a model could not decode it (format)") {
			t.Fatalf("context:\n%s", ctx)
		}
	}
}

// An image over the model's pixels is shrunk to fit, into the shrink cache, and sent inline;
// the upload is left as it is. A second resolve finds the copy in the cache. Without shrinking
// (Shrink.Off) it goes by path, saying so.
func TestResolveShrinkToFit(t *testing.T) {
	s := testStore(t)
	src := flatPNG(t, 8400, 60)
	wide := rsPut(t, s, "wide.png", "image/png", src)
	cache := filepath.Join(t.TempDir(), "shrink")
	opts := Options{Caps: Caps{Image: true}, Model: FindModel("anthropic"), Shrink: ShrinkOptions{Dir: cache}}
	for run, cached := range []bool{false, true} {
		res, err := Resolve(rsPrompt(t, []*manifest.Record{wide}, ""), rsLocal(s), opts)
		if err != nil {
			t.Fatal(err)
		}
		doc := rsOutput(t, res)
		rsValidate(t, doc)
		blocks := rsBlocks(t, doc)
		if res.Inline != 1 || res.Shrunk != 1 || blocks[0].Type != "image" {
			t.Fatalf("run %d: %d inline, %d shrunk: %+v", run, res.Inline, res.Shrunk, blocks)
		}
		if w, h, _ := inlineDims(t, blocks[0].Data); w != 8000 || h != 57 {
			t.Fatalf("run %d: inline %d×%d, want 8000×57", run, w, h)
		}
		f := res.refs[0].fit()
		if f == nil || f.FromWidth != 8400 || f.ToWidth != 8000 || f.FromSize != int64(len(src)) || f.Cached != cached ||
			!strings.HasPrefix(f.Path, cache+string(filepath.Separator)+wide.Blake3) {
			t.Fatalf("run %d: fit %+v", run, f)
		}
		if b, err := os.ReadFile(wide.Upload.Path); err != nil || !bytes.Equal(b, src) {
			t.Fatalf("the upload changed: %v", err)
		}
		explained := strings.Join(res.Explain(opts), "\n")
		where := "made now in "
		if cached {
			where = "reused from the cache "
		}
		if !strings.Contains(explained, "shrunk to fit from 8400×60 image/png of ") || !strings.Contains(explained, "to 8000×57 ") ||
			!strings.Contains(explained, where+f.Path) {
			t.Fatalf("run %d: explain:\n%s", run, explained)
		}
	}
	opts.Shrink = ShrinkOptions{Off: true}
	res, err := Resolve(rsPrompt(t, []*manifest.Record{wide}, ""), rsLocal(s), opts)
	if err != nil || res.Inline != 0 {
		t.Fatalf("--no-shrink: %v, %d inline", err, res.Inline)
	}
	rsContextCount(t, rsBlocks(t, rsOutput(t, res)), "8400×60 px, more than the 8000 px a side anthropic takes; not shrunk (--no-shrink) (model anthropic)", 1)
}

// More than 20 images for Anthropic: each is shrunk to 2000 px a side, all inline.
func TestResolveShrinkCountRule(t *testing.T) {
	s := testStore(t)
	var recs []*manifest.Record
	shot := flatPNG(t, 2400, 40)
	for i := 0; i < 21; i++ {
		recs = append(recs, rsPut(t, s, "shot.png", "image/png", shot))
	}
	opts := Options{Caps: Caps{Image: true}, Model: FindModel("anthropic"), Shrink: ShrinkOptions{Dir: t.TempDir()}}
	res, err := Resolve(rsPrompt(t, recs, ""), rsLocal(s), opts)
	if err != nil || res.Inline != 21 || res.Shrunk != 21 {
		t.Fatalf("%v: %d inline, %d shrunk, want 21", err, res.Inline, res.Shrunk)
	}
	for i, b := range rsBlocks(t, rsOutput(t, res))[:21] {
		if w, _, _ := inlineDims(t, b.Data); w != 2000 {
			t.Fatalf("image %d: %d px wide, want 2000", i, w)
		}
	}
}

// An image shrink cannot decode (its header parses, its scan does not) goes by path with
// shrink's reason, inside a folder upload too.
func TestResolveShrinkAsIs(t *testing.T) {
	s := testStore(t)
	bad := rsPut(t, s, "big.jpg", "image/jpeg", jpegHeaderOnly(9000, 100))
	opts := Options{Caps: Caps{Image: true}, Model: FindModel("anthropic"), Shrink: ShrinkOptions{Dir: t.TempDir()}}
	res, err := Resolve(rsPrompt(t, []*manifest.Record{bad}, ""), rsLocal(s), opts)
	if err != nil || res.Inline != 0 {
		t.Fatalf("%v: %d inline", err, res.Inline)
	}
	rsContextCount(t, rsBlocks(t, rsOutput(t, res)), "9000×100 px, more than the 8000 px a side anthropic takes; shrink could not fit it (undecodable: jpeg", 1)
}

// The whole request against the model: Anthropic takes 32 MB in one request; the images past it
// go by path with that reason.
func TestResolveRequestBytes(t *testing.T) {
	s := testStore(t)
	recs := rsShots(t, s, 9, 3_500_000, "shot-%d.png")
	opts := Options{Caps: Caps{Image: true}, Model: FindModel("anthropic"), MaxMessage: 64 << 20, InlineBudget: 64 << 20}
	res, err := Resolve(rsPrompt(t, recs, ""), rsLocal(s), opts)
	if err != nil {
		t.Fatal(err)
	}
	doc := rsOutput(t, res)
	if res.Inline != 6 || res.ByPath != 3 || len(doc) > 32_000_000 {
		t.Fatalf("%d inline, %d by path, %d bytes; want 6, 3 within 32 MB", res.Inline, res.ByPath, len(doc))
	}
	rsContextCount(t, rsBlocks(t, doc), "by path, inline it would pass the 32000000 bytes anthropic takes in one request (model anthropic)", 3)
	if m := FindModel("gemini"); m.MaxRequestBytes != 100_000_000 {
		t.Fatalf("gemini takes %d bytes a request, want 100 MB", m.MaxRequestBytes)
	}
}

// --max-tokens: images go inline while the estimate stays within it, later ones by path;
// Explain gives each inline image's estimate and the request's.
func TestResolveMaxTokens(t *testing.T) {
	s := testStore(t)
	var recs []*manifest.Record
	for i := 0; i < 5; i++ {
		recs = append(recs, rsPut(t, s, "square.png", "image/png", pngHeader(1000, 1000)))
	}
	opts := Options{Caps: Caps{Image: true}, Model: FindModel("anthropic"), MaxTokens: 3000}
	res, err := Resolve(rsPrompt(t, recs, ""), rsLocal(s), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Inline != 2 || res.Tokens != 2666 {
		t.Fatalf("%d inline, %d tokens; want 2, 2666", res.Inline, res.Tokens)
	}
	rsContextCount(t, rsBlocks(t, rsOutput(t, res)), "by path, the inline images' estimated input tokens would pass --max-tokens 3000 (limits)", 3)
	explained := strings.Join(res.Explain(opts), "\n")
	if strings.Count(explained, "; about 1333 input tokens") != 2 ||
		!strings.HasSuffix(explained, "\nrequest: 2 inline images, about 2666 input tokens for model anthropic (--max-tokens 3000)") {
		t.Fatalf("explain:\n%s", explained)
	}
}
