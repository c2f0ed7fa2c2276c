package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/shrink"
	"github.com/attachctl/attachctl/shrink/doc"
)

// Documents (docs/resolve.md, "How documents reach each model"). A PDF or office file that the
// adapter does not read itself from a link reaches the model as what it can read: its text (a
// resource block where the agent takes embedded context, else a text block) within --doc-max,
// cut at a page boundary; for a vision model whose document has no or little text (a scan, a
// deck), its first --doc-pages pages as images, which then go as any inline image does (shrunk
// to fit, the image budget, the request's count); and always its path. The text and the page
// images are cached by the document's BLAKE3 beside shrink's cache, so a second resolve does not
// read the document again. A document the engine cannot read (encrypted, damaged, too large, too
// slow) goes by path with the engine's one-line reason; the rest of the prompt is not affected.

// Defaults of resolve's document limits.
const (
	DefaultDocMax     = 131072 // 128 KiB of document text in one prompt: about 32,000 tokens
	DefaultDocPages   = 4      // pages rendered for a vision model when a document has little text
	DefaultDocTimeout = 20 * time.Second
)

// DocOptions tune how documents are delivered. Zero values take the defaults.
type DocOptions struct {
	// Max is the bytes of document text one prompt carries, documents taken in prompt order.
	Max int64
	// Pages is how many pages are rendered for a vision model; negative renders none.
	Pages int
	// Timeout bounds the engine's work on one document.
	Timeout time.Duration
}

// textPerPage is the text a page must average, over the pages that would be rendered, for a
// document's text layer to stand for it: below it (a scan, slides of pictures, a page of
// figures with a caption) the pages go as images to a vision model as well.
const textPerPage = 64

// docEngine is the document engine, a seam the table tests replace with a fake that counts calls.
var docEngine = struct {
	format func(mime string) string
	text   func(ctx context.Context, r io.ReaderAt, size int64, format string, lim doc.Limits) ([]doc.Page, doc.Info)
	render func(ctx context.Context, r io.ReaderAt, size int64, page, maxLongEdge int, lim doc.Limits) (image.Image, error)
	warm   func(lim doc.Limits) error
}{doc.FormatOf, doc.Text, doc.Render, doc.Warm}

// docState is what became of a document reference.
type docState struct {
	format string
	info   doc.Info
	pages  []doc.Page
	cached bool // its text came from the cache
	// reads: the adapter reads this format itself from a link (gemini-cli and PDFs).
	reads bool
	// sent is how many pages of text went; cut, whether the last of them was cut short.
	sent    int
	cut     bool
	cutLen  int   // the bytes of the last page's text that went, when cut
	textLen int64 // the bytes of the text that went
	// pre and post are the block that carries it, before and after the text (docAround).
	pre, post []byte
	// images are the page references rendered for a vision model; renderNote says why there are
	// none when the text is thin.
	images     []*ref
	renderNote string
}

// layerDocument is the layer of a document that goes by path for what the document is
// (encrypted, damaged, too large, no text): the engine's reason.
const layerDocument = "document"

// docNeedsPages reports whether a document whose pages hold this text is thin: its text stands
// for too little of its first n pages.
func docNeedsPages(pages []doc.Page, n int) bool {
	if n <= 0 {
		return false
	}
	n = min(n, len(pages))
	total := 0
	for _, p := range pages[:n] {
		total += len(strings.TrimSpace(p.Text))
	}
	return total < textPerPage*n
}

// vision reports whether every layer takes a rendered page (a PNG image) inline.
func vision(opts Options) bool {
	if !opts.Caps.Image {
		return false
	}
	if a := opts.Adapter; a != nil && !a.Passes.Image {
		return false
	}
	return opts.Model == nil || slices.Contains(opts.Model.Images, "image/png")
}

// pageEdge is the long edge, in pixels, a page is rendered at for the model: the size its
// provider scales an image to before reading it, within its pixels a side.
func pageEdge(opts Options) int {
	edge := defaultPageEdge
	if m := opts.Model; m != nil {
		if m.PageEdge > 0 {
			edge = m.PageEdge
		}
		if m.MaxSide > 0 {
			edge = min(edge, m.MaxSide)
		}
	}
	return edge
}

// defaultPageEdge is the long edge of a page rendered for a model no profile knows: Anthropic's,
// the smallest of the providers'.
const defaultPageEdge = 1568

// docLimits are the engine's limits for one document under opts: its memory within --max-memory.
func docLimits(opts Options) doc.Limits {
	lim := doc.DefaultLimits
	lim.MaxMemory = min(lim.MaxMemory, docMemory(opts))
	lim.Timeout = opts.Docs.Timeout
	return lim
}

func docMemory(opts Options) int64 {
	if opts.Shrink.MaxMemory > 0 {
		return opts.Shrink.MaxMemory
	}
	return shrink.DefaultMaxMemory
}

// docsAll reads every document of the prompt that goes to the model as text and pages, and
// inserts each one's page references after it (nil blocks: they exist only once inlined). A
// document that cannot be read keeps the engine's reason and goes by path.
func docsAll(u Uploads, blocks []object, refs []*ref, opts Options) ([]object, []*ref, error) {
	errs := eachRef(refs, func(_ int, r *ref) error {
		if r.child() || r.kind != manifest.KindDocument {
			return nil
		}
		format := docEngine.format(r.mime)
		if format == "" {
			return nil
		}
		r.doc = &docState{format: format}
		if a := opts.Adapter; a != nil && slices.Contains(a.Reads, format) {
			r.doc.reads = true
			return nil
		}
		return readDoc(u, r, opts)
	})
	for i, err := range errs {
		if err != nil {
			return nil, nil, atBlock(i, err)
		}
	}
	var ob []object
	var or []*ref
	for i, r := range refs {
		ob, or = append(ob, blocks[i]), append(or, r)
		if r != nil && r.doc != nil {
			for _, p := range r.doc.images {
				ob, or = append(ob, nil), append(or, p)
			}
		}
	}
	return ob, or, nil
}

// readDoc gets document r's text and, when it is thin and the model sees images, its first
// pages, from the cache or from the engine within the memory budget and the time limit.
func readDoc(u Uploads, r *ref, opts Options) error {
	d := r.doc
	dir := opts.Shrink.Dir
	lim := docLimits(opts)
	textPath := ""
	var entry *textEntry // what the cache has of it
	if dir != "" && r.blake3 != "" {
		textPath = textEntryPath(dir, r.blake3)
		// An entry holds at most the text the engine may return, and its page table.
		if e, ok := readText(textPath, r, d.format, lim.MaxMemory); ok {
			d.info, d.pages, d.cached, entry = e.info, e.pages, true, e
		}
	}
	want := 0
	if opts.Docs.Pages > 0 && vision(opts) && d.format == "pdf" {
		want = opts.Docs.Pages
	}
	edge := pageEdge(opts)
	var render []int // pages not in the cache
	have := map[int]*ref{}
	if d.cached && d.info.Reason == "" && docNeedsPages(d.pages, want) {
		for n := 1; n <= min(want, d.info.Pages); n++ {
			if p := cachedPage(r, dir, n, edge, entry); p != nil {
				have[n] = p
			} else {
				render = append(render, n)
			}
		}
		if len(render) == 0 {
			d.images = pagesInOrder(have, min(want, d.info.Pages))
			return nil
		}
	}
	if d.cached && len(render) == 0 {
		return nil
	}
	// The engine's turn: the document's decoding within --max-memory and its time limit. The
	// first PDF of a process waits for pdfium's compile (or its load from the code cache) first,
	// apart from the time limit, which is the document's own.
	if d.format == "pdf" {
		if err := docEngine.warm(lim); err != nil {
			d.info.Reason = "the PDF engine did not start (" + oneLine(err) + ")"
			return nil
		}
	}
	release := shrink.Reserve(docMemory(opts), lim.MaxMemory)
	defer release()
	ctx := opts.Context
	start := time.Now()
	left := func() doc.Limits { // each call of the engine gets what is left of the time limit
		l := lim
		l.Timeout = max(time.Millisecond, opts.Docs.Timeout-time.Since(start))
		return l
	}
	src, cleanup, err := localSource(u, r, dir)
	if err != nil {
		return err
	}
	defer cleanup()
	f, err := os.Open(src)
	if err != nil {
		return fault.Errorf(fault.UploadUnreadable, "upload %s: %s: %v", r.id, r.label(), err)
	}
	defer f.Close()
	if !d.cached {
		d.pages, d.info = docEngine.text(ctx, f, r.size, d.format, lim) // the first call: the whole limit, as its reason says
		if err := ctx.Err(); err != nil {
			return err // a signal: the resolve stops
		}
		if d.info.Reason != "" { // a reason may be the time limit on a busy machine: not kept
			return nil
		}
		entry = &textEntry{info: d.info, pages: d.pages}
		if !docNeedsPages(d.pages, want) || dir == "" {
			if textPath != "" {
				shrink.WriteCache(textPath, encodeText(r.blake3, r.size, entry)) // a cache: a failed write costs the next run a read
			}
			if dir == "" && docNeedsPages(d.pages, want) {
				d.renderNote = "no cache folder to render its pages into"
			}
			return nil
		}
		for n := 1; n <= min(want, d.info.Pages); n++ {
			render = append(render, n)
		}
	}
	// The entry is written once pages are rendered, with them (and with the text read now,
	// whatever became of its pages).
	rendered := false
	defer func() {
		if textPath != "" && (rendered || !d.cached) {
			shrink.WriteCache(textPath, encodeText(r.blake3, r.size, entry))
		}
	}()
	for _, n := range render {
		if time.Since(start) >= opts.Docs.Timeout {
			d.renderNote = fmt.Sprintf("page %d was not rendered within the time limit of %s", n, opts.Docs.Timeout)
			break
		}
		m, err := docEngine.render(ctx, f, r.size, n, edge, left())
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			d.renderNote = fmt.Sprintf("page %d could not be rendered (%s)", n, oneLine(err))
			break
		}
		p, err := savePage(r, dir, n, edge, m)
		if err != nil {
			return err
		}
		have[n] = p
		entry.setShot(pageShot{n: n, edge: edge, size: p.size, sum: p.blake3})
		rendered = true
	}
	d.images = pagesInOrder(have, min(want, d.info.Pages))
	return nil
}

// oneLine is an error's first line.
func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// pagesInOrder lists the page references from page 1 on, up to the first page missing.
func pagesInOrder(have map[int]*ref, n int) []*ref {
	var out []*ref
	for k := 1; k <= n && have[k] != nil; k++ {
		out = append(out, have[k])
	}
	return out
}

// savePage encodes a rendered page as PNG (text and line art stay sharp; shrink to fit turns a
// photo-like page into JPEG when it must) into the cache.
func savePage(r *ref, dir string, n, edge int, m image.Image) (*ref, error) {
	var b bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&b, m); err != nil {
		return nil, fault.Errorf(fault.UploadUnreadable, "upload %s: %s: page %d: %v", r.id, r.label(), n, err)
	}
	path := pagePath(r, dir, n, edge)
	sum, err := shrink.WriteCache(path, b.Bytes())
	if err != nil {
		return nil, fault.Errorf(fault.UploadUnreadable, "upload %s: %s: caching page %d: %v", r.id, r.label(), n, err)
	}
	return pageRef(r, n, path, int64(b.Len()), b.Bytes()[:min(b.Len(), headSize)], sum), nil
}

// pageRef is page n of document r as an image reference whose data is the PNG at path, of size
// bytes hashing to sum, which starts with head.
func pageRef(r *ref, n int, path string, size int64, head []byte, sum string) *ref {
	p := &ref{typ: "image", id: r.id, name: r.name, each: r.each, of: r, page: n, path: path, link: r.link,
		size: size, blake3: sum, mime: "image/png", kind: manifest.KindImage, image: true}
	p.checkHeader(head)
	return p
}

// docPieces calls put with each piece of the text a document's block carries when its first k
// pages go (the last cut to cut bytes when cut > 0), in order: a head naming it, the pages each
// after its page head, and what is left out. The text is never held whole: plan counts its
// pieces and WriteTo escapes them into the output one by one.
func docPieces(r *ref, k, cut int, put func(string)) {
	d := r.doc
	put(docHead(r))
	for i, p := range d.pages[:k] {
		t := p.Text
		if i == k-1 && cut > 0 {
			t = t[:cut]
		}
		put(pageHead(d.format, p.N))
		put(t)
	}
	if rest := restNote(d, k, cut); rest != "" {
		put("\n\n" + rest)
	}
}

// pageHead is the line before a page's text.
func pageHead(format string, n int) string {
	return "\n\n[" + unit(format, 1) + " " + strconv.Itoa(n) + "]\n"
}

// docHead is the line that starts a document's text: what it is and where.
func docHead(r *ref) string {
	return fmt.Sprintf("Text of %s (%s, %d bytes, %d %s), on disk at %s:", escapePath(r.modelName()), r.mime, r.size,
		r.doc.info.Pages, unit(r.doc.format, r.doc.info.Pages), escapePath(r.link))
}

// restNote says which pages a document's text leaves out: "" when none.
func restNote(d *docState, k, cut int) string {
	last := d.info.Pages
	if len(d.pages) > 0 {
		last = max(last, d.pages[len(d.pages)-1].N)
	}
	switch {
	case cut > 0 && k < len(d.pages):
		return fmt.Sprintf("the rest of page %d and pages %d-%d not included: open the file", d.pages[k-1].N, d.pages[k].N, last)
	case cut > 0:
		return fmt.Sprintf("the rest of page %d not included: open the file", d.pages[k-1].N)
	case k < len(d.pages):
		return fmt.Sprintf("pages %d-%d not included: open the file", d.pages[k].N, last)
	}
	return ""
}

// unit is what a document's pages are called.
func unit(format string, n int) string {
	u := "page"
	switch format {
	case "pptx":
		u = "slide"
	case "xlsx":
		u = "sheet"
	}
	if n != 1 {
		u += "s"
	}
	return u
}

// hasText reports whether a document has any text to send.
func (d *docState) hasText() bool {
	for _, p := range d.pages {
		if strings.TrimSpace(p.Text) != "" {
			return true
		}
	}
	return false
}

// docBlock is the block carrying a document's text: a resource (uri the document's, mimeType
// text/plain) where the agent takes embedded context and its adapter passes it on, else text.
// The text's value is the mark: docAround cuts the block there.
func docBlock(r *ref, opts Options) object {
	text := json.RawMessage(mark)
	if opts.Caps.EmbeddedContext && (opts.Adapter == nil || opts.Adapter.Passes.EmbeddedContext) {
		res := object{{"uri", jsonString(r.uri)}, {"mimeType", jsonString("text/plain")}, {"text", text}}
		return resolved(r, field{"type", jsonString("resource")}, field{"resource", res.marshal()})
	}
	o := object{{"type", jsonString("text")}, {"text", text}}
	for _, f := range r.rest {
		if f.key == "annotations" || f.key == metaKey {
			o = append(o, f)
		}
	}
	return o
}

// docAround is what of a document's block comes before and after its text, quotes included.
func docAround(out object) (pre, post []byte) {
	pre, post, _ = bytes.Cut(out.marshal(), []byte(mark))
	return append(pre, '"'), append([]byte{'"'}, post...)
}

// textTokens estimates the input tokens of text: about four bytes a token for English prose, the
// rule of thumb the providers give.
func textTokens(n int64) int64 { return (n + 3) / 4 }

// planDoc decides how much of document r's text goes, within the text budget left (room bytes),
// the tokens left (tokens, -1: no limit) and the message (fits: whether a block of that size
// passes); it returns the block and its size, or nil with the reason when none of it goes.
func planDoc(r *ref, opts Options, room, tokens int64, fits func(n int64) bool) (object, int64, string) {
	d := r.doc
	if tokens >= 0 {
		room = min(room, tokens*4)
	}
	var out object
	head := int64(len(docHead(r)))
	// what the first k pages take, page heads included: cum[k]
	cum := make([]int64, len(d.pages)+1)
	for i, p := range d.pages {
		cum[i+1] = cum[i] + int64(len(pageHead(d.format, p.N))+len(p.Text))
	}
	for k := len(d.pages); ; {
		// the most whole pages within room, then the last cut at a line when not even one fits
		for k > 0 && head+cum[k]+int64(len(restNote(d, k, 0)))+2 > room {
			k--
		}
		cut := 0
		if k == 0 && len(d.pages) > 0 {
			avail := room - head - int64(len(pageHead(d.format, d.pages[0].N))) - int64(len(restNote(d, 1, 1))) - 2
			if avail > 0 {
				cut = cutAt(d.pages[0].Text, int(avail))
			}
			if cut == 0 {
				return nil, 0, fmt.Sprintf("its text would pass %s", docLimitName(opts, room))
			}
			k = 1
		}
		if d.pre == nil {
			out = docBlock(r, opts)
			d.pre, d.post = docAround(out)
		}
		n, text := int64(len(d.pre)+len(d.post)), int64(0)
		docPieces(r, k, cut, func(s string) {
			n += int64(jsonEscapedLen(s))
			text += int64(len(s))
		})
		if fits(n) {
			d.sent, d.cut, d.cutLen, d.textLen = k, cut > 0, cut, text
			return out, n, ""
		}
		// over the message: as much less text as the block passes it by, escapes included
		room -= max(1, n-room/2)
		if room <= head {
			return nil, 0, reasonOverMessage(opts.MaxMessage)
		}
		k = len(d.pages)
	}
}

// docLimitName names the limit that left no room for a document's text.
func docLimitName(opts Options, room int64) string {
	if opts.MaxTokens > 0 && room < opts.Docs.Max {
		return fmt.Sprintf("--max-tokens %d", opts.MaxTokens)
	}
	return fmt.Sprintf("the documents' text budget, --doc-max %d bytes", opts.Docs.Max)
}

// cutAt is where text is cut to at most n bytes: after its last line break within them, else
// at a rune boundary; 0 when nothing fits.
func cutAt(text string, n int) int {
	if n >= len(text) {
		return len(text)
	}
	if i := strings.LastIndexByte(text[:n], '\n'); i > 0 {
		return i
	}
	for n > 0 && n < len(text) && text[n]&0xC0 == 0x80 {
		n--
	}
	return n
}

// docReason is why document r goes by path and who decided, "" when its text or pages go (or
// when no layer would take it: a document the engine does not read).
func (r *ref) docReason(opts Options) (layer, reason string) {
	d := r.doc
	switch {
	case d == nil:
		return "", ""
	case d.reads:
		return layerAdapter(opts.Adapter), fmt.Sprintf("%s reads a %s itself from its path", opts.Adapter.Name, strings.ToUpper(d.format))
	case d.info.Reason != "":
		return layerDocument, d.info.Reason
	case !d.hasText() && len(d.images) == 0:
		why := "it has no text layer"
		switch {
		case d.renderNote != "":
			why += "; " + d.renderNote
		case d.format != "pdf":
		case opts.Docs.Pages <= 0:
			why += ", and no pages are rendered (--doc-pages 0)"
		case !vision(opts):
			why += ", and the model takes no images"
		}
		return layerDocument, why
	}
	return "", ""
}

// docNote is what a document's context line adds for its text and pages in the prompt.
func docNote(r *ref) string {
	d := r.doc
	var parts []string
	if d.sent > 0 {
		s := fmt.Sprintf("its text (%s 1-%d of %d", unit(d.format, 2), d.pages[d.sent-1].N, max(d.info.Pages, d.pages[len(d.pages)-1].N))
		if d.cut {
			s += ", the last cut short"
		}
		parts = append(parts, s+") is in this prompt")
	}
	n := 0
	for _, p := range d.images {
		if p.mode == inlineImage {
			n++
		}
	}
	if n > 0 {
		parts = append(parts, fmt.Sprintf("its first %d %s inline as images", n, unit("pdf", n)))
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, "; ")
}

// explainDoc is what --explain says of a document's text and pages.
func (r *ref) explainDoc() string {
	d := r.doc
	s := fmt.Sprintf("document text, %d of %d %s", d.sent, len(d.pages), unit(d.format, len(d.pages)))
	if d.cut {
		s += " (the last cut short)"
	}
	if d.cached {
		s += ", reused from the cache"
	}
	return s + explainPages(d)
}

// explainPages says how many of a document's rendered pages went inline, and why no more were
// rendered when the rendering stopped early.
func explainPages(d *docState) string {
	if len(d.images) == 0 {
		if d.renderNote != "" {
			return "; " + d.renderNote
		}
		return ""
	}
	n := 0
	for _, p := range d.images {
		if p.mode == inlineImage {
			n++
		}
	}
	s := fmt.Sprintf("; %d of %d pages rendered went inline as images", n, len(d.images))
	if d.renderNote != "" { // why the rendering stopped short of --doc-pages (a slow or damaged page)
		s += "; " + d.renderNote
	}
	return s
}
