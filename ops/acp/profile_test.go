package acp

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color/palette"
	"image/gif"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest"
)

// pngHeader is a PNG that says it is w×h: its signature, IHDR and IEND (resolve reads the
// header; nothing decodes the pixels).
func pngHeader(w, h int) []byte {
	chunk := func(typ string, data []byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
		b = append(append(b, typ...), data...)
		return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(append([]byte(typ), data...)))
	}
	ihdr := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, uint32(w)), uint32(h))
	ihdr = append(ihdr, 8, 6, 0, 0, 0)
	b := append([]byte("\x89PNG\r\n\x1a\n"), chunk("IHDR", ihdr)...)
	return append(b, chunk("IEND", nil)...)
}

func animatedGIF(t *testing.T) []byte {
	var b bytes.Buffer
	f := image.NewPaletted(image.Rect(0, 0, 8, 8), palette.Plan9)
	if err := gif.EncodeAll(&b, &gif.GIF{Image: []*image.Paletted{f, f}, Delay: []int{10, 10}}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// The three layers: a file goes inline only where the protocol, the adapter and the model all
// take it; otherwise by path, with the layer and its reason in the context block (and in
// Explain).
func TestResolveLayers(t *testing.T) {
	s := testStore(t)
	huge := rsPut(t, s, "huge.png", "image/png", pngHeader(9000, 6000))
	small := rsPut(t, s, "small.png", "image/png", pngHeader(1200, 800))
	anim := rsPut(t, s, "anim.gif", "image/gif", animatedGIF(t))
	wav := rsPut(t, s, "note.wav", "audio/wav", rsWAV(2048))
	claude, codex := FindAdapter("@zed-industries/claude-agent-acp"), FindAdapter("codex-acp")
	all := Caps{Image: true, Audio: true, EmbeddedContext: true}
	for _, c := range []struct {
		name   string
		opts   Options
		recs   []*manifest.Record
		inline []*manifest.Record
		why    map[*manifest.Record]string // a by-path file's reason, with its layer
	}{
		{"protocol alone", Options{Caps: all}, []*manifest.Record{huge, anim, wav}, []*manifest.Record{huge, anim, wav}, nil},
		{"anthropic: 8000 px a side", Options{Caps: all, Model: FindModel("anthropic")}, []*manifest.Record{huge, small, anim},
			[]*manifest.Record{small, anim}, map[*manifest.Record]string{huge: "9000×6000 px, more than the 8000 px a side anthropic takes (model anthropic)"}},
		{"openai: no animated GIF", Options{Caps: all, Model: FindModel("openai")}, []*manifest.Record{small, anim},
			[]*manifest.Record{small}, map[*manifest.Record]string{anim: "an animated image, and openai takes none inline (model openai)"}},
		{"gemini: no GIF at all", Options{Caps: all, Model: FindModel("gemini")}, []*manifest.Record{small, anim, wav},
			[]*manifest.Record{small, wav}, map[*manifest.Record]string{anim: "gemini takes no image/gif inline (model gemini)"}},
		{"claude drops audio", Options{Caps: all, Adapter: claude, Model: FindModel("anthropic")}, []*manifest.Record{small, wav},
			[]*manifest.Record{small}, map[*manifest.Record]string{wav: "claude-agent-acp drops audio blocks (adapter claude-agent-acp)"}},
		{"codex: the protocol says no audio first", Options{Caps: Caps{Image: true}, Adapter: codex, Model: FindModel("openai")}, []*manifest.Record{small, wav},
			[]*manifest.Record{small}, map[*manifest.Record]string{wav: reasonNoAudioCap + " (protocol)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := Resolve(rsPrompt(t, c.recs, "look"), rsLocal(s), c.opts)
			if err != nil {
				t.Fatal(err)
			}
			doc := rsOutput(t, res)
			rsValidate(t, doc)
			blocks := rsBlocks(t, doc)
			ctx := blocks[len(blocks)-1].Text
			if res.Inline+res.Audio != len(c.inline) {
				t.Fatalf("%d inline, want %d:\n%s", res.Inline+res.Audio, len(c.inline), ctx)
			}
			for i, rec := range c.recs {
				b := blocks[1+i]
				inline := b.Data != ""
				want := false
				for _, r := range c.inline {
					want = want || r == rec
				}
				if inline != want {
					t.Fatalf("%s: inline %v, want %v", rec.Name, inline, want)
				}
				if why, ok := c.why[rec]; ok && !strings.Contains(ctx, rec.Upload.Path+" ("+rec.Mime+", ") || ok && !strings.Contains(ctx, ": by path, "+why) {
					t.Fatalf("%s: the context block does not give %q:\n%s", rec.Name, why, ctx)
				}
			}
			explained := strings.Join(res.Explain(c.opts), "\n")
			for rec, why := range c.why {
				layer := why[strings.LastIndex(why, "(")+1 : len(why)-1]
				if !strings.Contains(explained, manifest.Quote(rec.Name)) || !strings.Contains(explained, "by path ("+layer+")") {
					t.Fatalf("Explain does not say %s went by path for %s:\n%s", rec.Name, layer, explained)
				}
			}
		})
	}
}

// Anthropic's count rule: more than 20 images in a request, and only 2000 px a side is taken.
func TestResolveModelCountRule(t *testing.T) {
	s := testStore(t)
	var recs []*manifest.Record
	for i := 0; i < 21; i++ {
		recs = append(recs, rsPut(t, s, "shot.png", "image/png", pngHeader(2100+i, 1000)))
	}
	opts := Options{Caps: Caps{Image: true}, Model: FindModel("anthropic")}
	res, err := Resolve(rsPrompt(t, recs[:20], ""), rsLocal(s), opts)
	if err != nil || res.Inline != 20 {
		t.Fatalf("20 images of 2100 px: %v, %d inline, want all", err, res.Inline)
	}
	res, err = Resolve(rsPrompt(t, recs, ""), rsLocal(s), opts)
	if err != nil || res.Inline != 0 || res.ByPath != 21 {
		t.Fatalf("21 images of 2100 px: %v, %d inline, want none", err, res.Inline)
	}
	blocks := rsBlocks(t, rsOutput(t, res))
	if ctx := blocks[len(blocks)-1].Text; !strings.Contains(ctx, "more than the 2000 px a side anthropic takes when a request has more than 20 images (model anthropic)") {
		t.Fatalf("context:\n%s", ctx)
	}
}

// gemini-cli loses every image of a prompt that holds a link: with an image inline, the by-path
// files go as text blocks naming their paths; without one, as links whose uri is the path as it
// is (it opens uri minus file:// without decoding).
func TestResolveGeminiFeeding(t *testing.T) {
	s := testStore(t)
	img := rsPut(t, s, "Screen Shot 2026-11-30 at 10.00.00\u202fAM.png", "image/png", pngHeader(1200, 800))
	pdf := rsPut(t, s, "report #1 100%.pdf", "application/pdf", []byte("%PDF-1.4\n%%EOF\n"))
	opts := Options{Caps: Caps{Image: true, Audio: true, EmbeddedContext: true}, Adapter: FindAdapter("@google/gemini-cli")}
	opts.Model = FindModel(opts.Adapter.Model)
	res, err := Resolve(rsPrompt(t, []*manifest.Record{img, pdf}, "look"), rsLocal(s), opts)
	if err != nil {
		t.Fatal(err)
	}
	doc := rsOutput(t, res)
	rsValidate(t, doc)
	if bytes.Contains(doc, []byte(`"resource_link"`)) || bytes.Contains(doc, []byte(`"resource"`)) {
		t.Fatalf("a link beside an inline image: %s", doc)
	}
	blocks := rsBlocks(t, doc)
	if blocks[1].Type != "image" || blocks[2].Type != "text" || !strings.Contains(blocks[2].Text, pdf.Upload.Path) {
		t.Fatalf("blocks: %+v", blocks)
	}
	if !strings.Contains(blocks[3].Text, "\n- "+pdf.Upload.Path+" (application/pdf") {
		t.Fatalf("the context block does not name the PDF:\n%s", blocks[3].Text)
	}
	res, err = Resolve(rsPrompt(t, []*manifest.Record{pdf}, "look"), rsLocal(s), opts)
	if err != nil {
		t.Fatal(err)
	}
	blocks = rsBlocks(t, rsOutput(t, res))
	if blocks[1].Type != "resource_link" || blocks[1].URI != "file://"+pdf.Upload.Path {
		t.Fatalf("the link's uri is %q, want the path as it is", blocks[1].URI)
	}
}
