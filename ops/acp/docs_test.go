package acp

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/scripts/docgen"
	"github.com/attachctl/attachctl/shrink/doc"
)

// fakeEngine stands for shrink/doc in these tests: it knows each document by its bytes and
// counts its calls, so that what resolve does with a document's text and pages is tested apart
// from the engine's reading of it (shrink/doc's own tests).
type fakeEngine struct {
	mu      sync.Mutex
	docs    map[string]fakeDoc
	texts   atomic.Int32
	renders atomic.Int32
	lim     doc.Limits
	block   bool // text waits for the context to end (a document that takes too long)
	badPage int  // a page render fails on
}

type fakeDoc struct {
	pages []doc.Page
	info  doc.Info
}

func useFakeEngine(t *testing.T) *fakeEngine {
	f := &fakeEngine{docs: map[string]fakeDoc{}}
	saved := docEngine
	t.Cleanup(func() { docEngine = saved })
	docEngine.format = func(mime string) string {
		switch mime {
		case "application/pdf":
			return "pdf"
		case "application/vnd.openxmlformats-officedocument.wordprocessingml.document":
			return "docx"
		case "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet":
			return "xlsx"
		}
		return ""
	}
	read := func(r io.ReaderAt, size int64) string {
		b := make([]byte, size)
		r.ReadAt(b, 0)
		return string(b)
	}
	docEngine.text = func(ctx context.Context, r io.ReaderAt, size int64, format string, lim doc.Limits) ([]doc.Page, doc.Info) {
		f.texts.Add(1)
		f.mu.Lock()
		f.lim = lim
		d, ok := f.docs[read(r, size)]
		f.mu.Unlock()
		if f.block { // as the engine does: its time limit is lim.Timeout
			<-time.After(lim.Timeout)
			return nil, doc.Info{Format: format, Reason: "reading it took longer than the limit of " + lim.Timeout.String()}
		}
		if !ok {
			return nil, doc.Info{Format: format, Reason: "not a document the fake knows"}
		}
		return d.pages, d.info
	}
	docEngine.warm = func(doc.Limits) error { return nil }
	docEngine.render = func(ctx context.Context, r io.ReaderAt, size int64, page, edge int, lim doc.Limits) (image.Image, error) {
		f.renders.Add(1)
		if page == f.badPage {
			return nil, errors.New("the page's content stream is damaged")
		}
		w, h := edge*17/22, edge
		m := image.NewNRGBA(image.Rect(0, 0, w, h))
		for y := range h { // the pixels set in place: a Set a pixel is seconds a page under -race
			row := m.Pix[y*m.Stride:]
			for x := range w {
				row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = uint8(page*40), uint8(x), uint8(y), 255
			}
		}
		return m, nil
	}
	return f
}

// add makes a document of the kind docgen makes and tells the fake what it holds.
func (f *fakeEngine) add(data []byte, format string, texts ...string) []byte {
	var pages []doc.Page
	layer := false
	for i, s := range texts {
		pages = append(pages, doc.Page{N: i + 1, Text: s})
		layer = layer || s != ""
	}
	f.docs[string(data)] = fakeDoc{pages, doc.Info{Format: format, Pages: len(texts), TextLayer: layer}}
	return data
}

// docSentences are the pages of a text PDF: each more text than a page of a scan or a slide's
// title holds.
var docSentences = []string{
	"The quarterly report shows the blue heron count rose by twelve percent. Nobody expected it.",
	"On page two the committee approves the new bridge across the Elbe, to be built by spring.",
	"The third page ends with the word marmalade, said three times: marmalade, marmalade, marmalade.",
}

// Its documents' time limit is one no loaded machine reaches: the limit is wall-clock time (a
// document's reading stops when it runs out), and under -race on a busy machine rendering a
// fake's page took more than the default's 20 seconds, so that a test of what is rendered and
// cached saw one page of two. The tests of the limit itself set theirs.
func claudeOpts(t *testing.T) Options {
	a := FindAdapter("claude-agent-acp")
	return Options{Caps: a.Caps, Adapter: a, Model: FindModel(a.Model), Shrink: ShrinkOptions{Dir: t.TempDir()},
		Docs: DocOptions{Timeout: time.Hour}}
}

// A document goes as its text: a resource block where the agent takes embedded context (uri the
// document's own), a text block where it does not; its path stays in the context block.
func TestResolveDocumentText(t *testing.T) {
	f := useFakeEngine(t)
	s := testStore(t)
	pdf := rsPut(t, s, "report.pdf", "application/pdf", f.add(docgen.TextPDF(docSentences), "pdf", docSentences...))
	docx := rsPut(t, s, "notes.docx", "", f.add(docgen.DOCX([]string{"A docx sentence about walruses."}), "docx", "A docx sentence about walruses."))
	for _, tc := range []struct {
		name string
		opts Options
		typ  string
	}{
		{"claude", claudeOpts(t), "resource"},
		{"no embeddedContext", Options{Caps: Caps{Image: true}, Shrink: ShrinkOptions{Dir: t.TempDir()}}, "text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Resolve(rsPrompt(t, []*manifest.Record{pdf, docx}, "read these"), rsLocal(s), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			out := rsOutput(t, res)
			rsValidate(t, out)
			blocks := rsBlocks(t, out)
			if len(blocks) != 4 || res.Documents != 2 || res.ByPath != 0 || res.DocPages != 0 {
				t.Fatalf("%d blocks, res %+v", len(blocks), res)
			}
			text := func(b rsBlock) string {
				if b.Type != tc.typ {
					t.Fatalf("a document went as %s, want %s: %+v", b.Type, tc.typ, b)
				}
				if b.Resource != nil {
					if b.Resource.URI != "file://"+pdf.Upload.Path && b.Resource.URI != "file://"+docx.Upload.Path || b.Resource.MimeType != "text/plain" {
						t.Fatalf("resource %+v", b.Resource)
					}
					return b.Resource.Text
				}
				return b.Text
			}
			got := text(blocks[1])
			for _, s := range docSentences {
				if !strings.Contains(got, s) {
					t.Errorf("the PDF's text lacks %q:\n%s", s, got)
				}
			}
			if !strings.HasPrefix(got, "Text of report.pdf (application/pdf, ") || !strings.Contains(got, "3 pages), on disk at "+pdf.Upload.Path+":") || strings.Contains(got, "not included") {
				t.Errorf("its head: %q", got)
			}
			if !strings.Contains(text(blocks[2]), "walruses") {
				t.Errorf("the docx's text: %q", text(blocks[2]))
			}
			ctx := blocks[3].Text
			if !strings.Contains(ctx, "\n- "+pdf.Upload.Path+" (application/pdf, ") || !strings.Contains(ctx, ": its text (pages 1-3 of 3) is in this prompt; this is the file") {
				t.Errorf("the context block:\n%s", ctx)
			}
			ex := strings.Join(res.Explain(tc.opts), "\n")
			if !strings.Contains(ex, "block 1: report.pdf (application/pdf): document text, 3 of 3 pages") {
				t.Errorf("explain:\n%s", ex)
			}
		})
	}
}

// --doc-max is the documents' text in one prompt, taken in prompt order; a document is cut at a
// page boundary and says which pages are left out. --max-tokens counts the text too.
func TestResolveDocumentBudget(t *testing.T) {
	f := useFakeEngine(t)
	s := testStore(t)
	pdf := rsPut(t, s, "report.pdf", "application/pdf", f.add(docgen.TextPDF(docSentences), "pdf", docSentences...))
	second := rsPut(t, s, "more.pdf", "application/pdf", f.add(docgen.TextPDF([]string{"x"}), "pdf", strings.Repeat("A long page. ", 40)))
	whole := func(opts Options) string {
		res, err := Resolve(rsPrompt(t, []*manifest.Record{pdf}, ""), rsLocal(s), opts)
		if err != nil {
			t.Fatal(err)
		}
		return rsBlocks(t, rsOutput(t, res))[0].Resource.Text
	}
	full := whole(claudeOpts(t))
	two := strings.Index(full, "\n\n[page 3]")
	one := strings.Index(full, "\n\n[page 1]")
	const rest2 = "\n\npages 3-3 not included: open the file"
	for _, tc := range []struct {
		name      string
		max, toks int64
		want      string
		second    string
	}{
		{"two pages fit", int64(two + len(rest2)), 0, full[:two] + rest2, "its text would pass the documents' text budget, --doc-max %d bytes (limits)"},
		{"tokens", 0, int64(two+len(rest2)+3) / 4, full[:two] + rest2, "its text would pass --max-tokens %d (limits)"},
		{"not one page", int64(one + 90), 0, "", "its text would pass the documents' text budget, --doc-max %d bytes (limits)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := claudeOpts(t)
			opts.Docs.Max, opts.MaxTokens = tc.max, tc.toks
			res, err := Resolve(rsPrompt(t, []*manifest.Record{pdf, second}, ""), rsLocal(s), opts)
			if err != nil {
				t.Fatal(err)
			}
			blocks := rsBlocks(t, rsOutput(t, res))
			if blocks[0].Resource == nil {
				t.Fatalf("the first document went as %s", blocks[0].Type)
			}
			got := blocks[0].Resource.Text
			switch {
			case tc.want != "" && got != tc.want:
				t.Errorf("text:\n%s\nwant:\n%s", got, tc.want)
			case tc.want == "" && (!strings.HasSuffix(got, "\n\nthe rest of page 1 and pages 2-3 not included: open the file") || !strings.Contains(got, "[page 1]\nThe quarterly")):
				t.Errorf("text:\n%s", got)
			}
			if tc.max > 0 && int64(len(got)) > tc.max || tc.toks > 0 && res.Tokens > tc.toks {
				t.Errorf("%d bytes, %d tokens: over the limit", len(got), res.Tokens)
			}
			limit := tc.max + tc.toks
			if blocks[1].Type != "resource_link" || !strings.Contains(blocks[2].Text, fmt.Sprintf(tc.second, limit)) {
				t.Errorf("the second document: %s\n%s", blocks[1].Type, blocks[2].Text)
			}
		})
	}
}

// A scanned PDF (no text layer) goes to a vision model as its first --doc-pages pages, each an
// image named before it, within the image limits; its path stays. A model that takes no images
// gets the path and the reason.
func TestResolveDocumentPages(t *testing.T) {
	f := useFakeEngine(t)
	s := testStore(t)
	scan := rsPut(t, s, "scan.pdf", "application/pdf", f.add(docgen.ScanPDF(3), "pdf", "", "", ""))
	opts := claudeOpts(t)
	opts.Docs.Pages = 2
	res, err := Resolve(rsPrompt(t, []*manifest.Record{scan}, "what does it say"), rsLocal(s), opts)
	if err != nil {
		t.Fatal(err)
	}
	out := rsOutput(t, res)
	rsValidate(t, out)
	all := rsAllBlocks(t, out)
	// text, link, name, page 1, name, page 2, context
	if len(all) != 7 || all[1].Type != "resource_link" || all[3].Type != "image" || all[5].Type != "image" || res.DocPages != 2 || f.renders.Load() != 2 {
		t.Fatalf("%d blocks; res %+v; %d renders", len(all), res, f.renders.Load())
	}
	if !strings.HasPrefix(all[2].Text, "Page 1 of scan.pdf (image/png, ") || !strings.HasSuffix(all[4].Text, "rendered from the document), the document on disk at "+scan.Upload.Path+":") {
		t.Errorf("names: %q, %q", all[2].Text, all[4].Text)
	}
	for _, i := range []int{3, 5} {
		b, _ := base64.StdEncoding.DecodeString(all[i].Data)
		m, err := png.DecodeConfig(bytes.NewReader(b))
		if err != nil || max(m.Width, m.Height) != 1568 {
			t.Errorf("page %d: %dx%d %v, want a long edge of 1568 (anthropic)", i, m.Width, m.Height, err)
		}
	}
	if !strings.Contains(all[6].Text, scan.Upload.Path+" (application/pdf, ") || !strings.Contains(all[6].Text, ": its first 2 pages inline as images; this is the file") {
		t.Errorf("context:\n%s", all[6].Text)
	}
	ex := strings.Join(res.Explain(opts), "\n")
	if !strings.Contains(ex, "block 1: scan.pdf page 1 (image/png 1211×1568): inline image") || !strings.Contains(ex, "2 of 2 pages rendered went inline as images") {
		t.Errorf("explain:\n%s", ex)
	}

	// A page that fails to render ends the rendering; --explain says which and why beside the
	// pages that did go, as it does when none did.
	f.badPage = 2
	opts.Docs.Pages = 3
	scan4 := rsPut(t, s, "scan4.pdf", "application/pdf", f.add(docgen.ScanPDF(4), "pdf", "", "", "", ""))
	res, err = Resolve(rsPrompt(t, []*manifest.Record{scan4}, ""), rsLocal(s), opts)
	if err != nil {
		t.Fatal(err)
	}
	ex = strings.Join(res.Explain(opts), "\n")
	if !strings.Contains(ex, "1 of 1 pages rendered went inline as images; page 2 could not be rendered (the page's content stream is damaged)") {
		t.Errorf("explain with page 2 failing:\n%s", ex)
	}
	f.badPage = 0

	// No images: the path, and why.
	opts.Caps.Image = false
	res, err = Resolve(rsPrompt(t, []*manifest.Record{scan}, ""), rsLocal(s), opts)
	if err != nil {
		t.Fatal(err)
	}
	blocks := rsBlocks(t, rsOutput(t, res))
	if len(blocks) != 2 || !strings.Contains(blocks[1].Text, ": by path, it has no text layer, and the model takes no images (document)") {
		t.Fatalf("%+v", blocks)
	}
}

// A second resolve of the same prompt reads the text and the pages from the cache: the engine
// is not called again.
func TestResolveDocumentCached(t *testing.T) {
	f := useFakeEngine(t)
	s := testStore(t)
	pdf := rsPut(t, s, "report.pdf", "application/pdf", f.add(docgen.TextPDF(docSentences), "pdf", docSentences...))
	scan := rsPut(t, s, "scan.pdf", "application/pdf", f.add(docgen.ScanPDF(2), "pdf", "", ""))
	opts := claudeOpts(t)
	prompt := rsPrompt(t, []*manifest.Record{pdf, scan}, "")
	res, err := Resolve(prompt, rsLocal(s), opts)
	if err != nil {
		t.Fatal(err)
	}
	first := rsOutput(t, res)
	if f.texts.Load() != 2 || f.renders.Load() != 2 {
		t.Fatalf("first resolve: %d texts, %d renders", f.texts.Load(), f.renders.Load())
	}
	res, err = Resolve(prompt, rsLocal(s), opts)
	if err != nil {
		t.Fatal(err)
	}
	if f.texts.Load() != 2 || f.renders.Load() != 2 {
		t.Errorf("second resolve called the engine: %d texts, %d renders", f.texts.Load(), f.renders.Load())
	}
	if !bytes.Equal(rsOutput(t, res), first) {
		t.Errorf("the second resolve differs")
	}
	if ex := strings.Join(res.Explain(opts), "\n"); !strings.Contains(ex, "document text, 3 of 3 pages, reused from the cache") {
		t.Errorf("explain:\n%s", ex)
	}
}

// A document the engine cannot read goes by path with its one-line reason, and the rest of the
// prompt is not affected; one that takes too long stops at the time limit. The engine's memory
// is within --max-memory.
func TestResolveDocumentHostile(t *testing.T) {
	f := useFakeEngine(t)
	s := testStore(t)
	enc := docgen.EncryptedPDF()
	f.docs[string(enc)] = fakeDoc{nil, doc.Info{Format: "pdf", Reason: "encrypted: it needs a password"}}
	bad := rsPut(t, s, "locked.pdf", "application/pdf", enc)
	pdf := rsPut(t, s, "report.pdf", "application/pdf", f.add(docgen.TextPDF(docSentences), "pdf", docSentences...))
	img := rsPut(t, s, "a.png", "image/png", rsPNG(t, 4000, 1))
	opts := claudeOpts(t)
	opts.Shrink.MaxMemory = 64 << 20
	res, err := Resolve(rsPrompt(t, []*manifest.Record{bad, pdf, img}, ""), rsLocal(s), opts)
	if err != nil {
		t.Fatal(err)
	}
	blocks := rsBlocks(t, rsOutput(t, res))
	if blocks[0].Type != "resource_link" || blocks[1].Type != "resource" || blocks[2].Type != "image" {
		t.Fatalf("%+v", blocks)
	}
	if !strings.Contains(blocks[3].Text, bad.Upload.Path+" (application/pdf, ") || !strings.Contains(blocks[3].Text, ": by path, encrypted: it needs a password (document)") {
		t.Errorf("context:\n%s", blocks[3].Text)
	}
	if ex := strings.Join(res.Explain(opts), "\n"); !strings.Contains(ex, "block 0: locked.pdf (application/pdf): by path (document): encrypted: it needs a password") {
		t.Errorf("explain:\n%s", ex)
	}
	if f.lim.MaxMemory != 64<<20 {
		t.Errorf("the engine may hold %d bytes, not --max-memory's %d", f.lim.MaxMemory, 64<<20)
	}

	f.block = true
	slow := rsPut(t, s, "slow.pdf", "application/pdf", docgen.ManyPagesPDF(3))
	opts.Docs.Timeout = 50 * time.Millisecond
	start := time.Now()
	res, err = Resolve(rsPrompt(t, []*manifest.Record{slow, img}, ""), rsLocal(s), opts)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
	blocks = rsBlocks(t, rsOutput(t, res))
	if blocks[1].Type != "image" || !strings.Contains(blocks[2].Text, ": by path, reading it took longer than the limit of 50ms (document)") {
		t.Errorf("%+v", blocks)
	}
}

// gemini-cli reads a linked PDF itself and sends it to Gemini whole: it keeps getting the link.
// A .docx, which it skips as binary, goes as its text.
func TestResolveDocumentGemini(t *testing.T) {
	f := useFakeEngine(t)
	s := testStore(t)
	pdf := rsPut(t, s, "report.pdf", "application/pdf", f.add(docgen.TextPDF(docSentences), "pdf", docSentences...))
	docx := rsPut(t, s, "notes.docx", "", f.add(docgen.DOCX([]string{"walruses"}), "docx", "walruses"))
	a := FindAdapter("gemini-cli")
	opts := Options{Caps: a.Caps, Adapter: a, Model: FindModel(a.Model), Shrink: ShrinkOptions{Dir: t.TempDir()}}
	res, err := Resolve(rsPrompt(t, []*manifest.Record{pdf, docx}, ""), rsLocal(s), opts)
	if err != nil {
		t.Fatal(err)
	}
	blocks := rsBlocks(t, rsOutput(t, res))
	if blocks[0].Type != "resource_link" || blocks[0].URI != "file://"+pdf.Upload.Path || blocks[1].Type != "text" || !strings.Contains(blocks[1].Text, "walruses") {
		t.Fatalf("%+v", blocks)
	}
	if !strings.Contains(blocks[2].Text, ": by path, gemini-cli reads a PDF itself from its path (adapter gemini-cli)") {
		t.Errorf("context:\n%s", blocks[2].Text)
	}
	if f.texts.Load() != 1 {
		t.Errorf("the engine read %d documents, want the docx alone", f.texts.Load())
	}
}
