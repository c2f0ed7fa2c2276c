package ops

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/attachctl/attachctl/manifest"
	"github.com/gabriel-vasile/mimetype"
)

// Defaults of resolve's limits (SPEC section 6).
const (
	DefaultInlineMax    = 3932160  // 3.75 MiB: the largest image (or audio) that goes inline
	DefaultInlineBudget = 10485760 // 10 MiB: the inline image and audio bytes of one prompt
	DefaultMaxMessage   = 15728640 // 15 MiB: one message, counted over the whole output
	DefaultEmbedMax     = 65536    // 64 KiB: the largest text file embedded as a resource block
)

// Caps are the prompt capabilities of the agent (ACP PromptCapabilities).
type Caps struct {
	Image, Audio, EmbeddedContext bool
}

// ParseCaps reads a comma-separated list of image, audio and embeddedContext. An empty list is no
// capability at all; an unknown name is an error.
func ParseCaps(s string) (Caps, error) {
	var c Caps
	for _, f := range strings.Split(s, ",") {
		switch strings.TrimSpace(f) {
		case "":
		case "image":
			c.Image = true
		case "audio":
			c.Audio = true
		case "embeddedContext":
			c.EmbeddedContext = true
		default:
			return c, fmt.Errorf("unknown capability %q (known: image, audio, embeddedContext)", f)
		}
	}
	return c, nil
}

// ResolveOptions tune Resolve. Zero limits take the defaults.
type ResolveOptions struct {
	InlineMax    int64 // an image or audio file larger than this goes by path
	InlineBudget int64 // inline image and audio bytes of the whole prompt, taken in prompt order
	MaxMessage   int64 // bytes of the whole output document, its newline included
	EmbedMax     int64 // a text file larger than this is not embedded
	Caps         Caps
	// Now is the time the uploads are marked used; zero is time.Now().
	Now time.Time
}

func (o *ResolveOptions) defaults() {
	if o.InlineMax <= 0 {
		o.InlineMax = DefaultInlineMax
	}
	if o.InlineBudget <= 0 {
		o.InlineBudget = DefaultInlineBudget
	}
	if o.MaxMessage <= 0 {
		o.MaxMessage = DefaultMaxMessage
	}
	if o.EmbedMax <= 0 {
		o.EmbedMax = DefaultEmbedMax
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
}

// Resolution is a resolved prompt, ready to be written by WriteTo.
type Resolution struct {
	// Size is the length of the resolved document in bytes, its newline included: at most one
	// message.
	Size int64
	// IDs are the uploads the prompt names, in prompt order without repeats; all marked used.
	IDs []string
	// Inline, Audio, Embedded and ByPath count the references by how they went.
	Inline, Audio, Embedded, ByPath int
	// ContextListed is how many by-path files the context text block lists (all of them unless
	// the message had no room).
	ContextListed int

	s               *Store
	head, tail, ctx []byte   // the document around the prompt array, and the context block
	blocks          []object // the prompt's blocks as they came
	refs            []*ref   // per block, the reference it names (nil: passes through)
}

// How a reference goes out.
type mode int

const (
	modePath mode = iota
	inlineImage
	inlineAudio
	embedText
)

// ref is one reference block of the prompt.
type ref struct {
	block  object // the block as it came
	typ    string // image or resource_link
	id     string
	name   string
	path   string // the finished file
	size   int64
	mime   string // sniffed from the content
	image  bool   // PNG, JPEG, GIF or WebP by content
	audio  bool
	text   []byte // the whole content of a small text file, when embedding is possible
	mode   mode
	reason string // why an image or audio file went by path
	out    object // the resolved block, data excepted
}

// Resolve resolves the ACP session/prompt params (or JSON-RPC request carrying them) in input
// against the store, treating the input as untrusted (SPEC section 6). Every reference is
// checked and opened through the guarded open; images within the limits go inline, every other
// file by path as a file:// resource_link, listed in one context text block. Blocks and fields it
// does not resolve pass through as they are.
//
// Input that is not a prompt is a manifest.invalid error. A refused prompt returns an error that
// joins every refusal (each a *manifest.Error with its code) and marks nothing used; a resolved one
// has marked each upload it names used.
func (s *Store) Resolve(input []byte, opts ResolveOptions) (*Resolution, error) {
	opts.defaults()
	doc, err := parseDocument(input)
	if err != nil {
		return nil, err
	}
	blocks := make([]object, len(doc.prompt))
	refs := make([]*ref, len(doc.prompt)) // nil for a block that passes through
	var errs []error
	for i, raw := range doc.prompt {
		b, err := parseObject(raw)
		if err != nil {
			return nil, notPrompt("prompt block %d: %v", i, err)
		}
		blocks[i] = b
		r, err := checkBlock(i, b)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		refs[i] = r
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for i, r := range refs {
		if r == nil {
			continue
		}
		if err := s.examine(r, opts); err != nil {
			errs = append(errs, atBlock(i, err))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	res, err := s.plan(doc, blocks, refs, opts)
	if err != nil {
		return nil, err
	}
	if len(res.IDs) > 0 {
		if err := markUsed(s, res.IDs, opts.Now); err != nil {
			return nil, manifest.AsError(err, manifest.UploadUnreadable)
		}
	}
	return res, nil
}

// markUsed writes the .used markers of ids under the marker lock; a variable for tests.
var markUsed = func(s *Store, ids []string, at time.Time) error { return s.MarkUsed(ids, at) }

// notPrompt is the error for input that is not a session/prompt: exit 2.
func notPrompt(format string, args ...any) error {
	return manifest.Errorf(manifest.ManifestInvalid, "not an ACP session/prompt: "+format, args...)
}

// atBlock names the prompt block in a refusal.
func atBlock(i int, err error) error {
	e := manifest.AsError(err, manifest.UploadUnreadable)
	return manifest.Errorf(e.Code, "prompt block %d: %s", i, e.Message)
}

func invalid(i int, format string, args ...any) error {
	return manifest.Errorf(manifest.UploadInvalid, "prompt block %d: "+format, append([]any{i}, args...)...)
}

// document is the parsed input: the params, and the request around them if there was one.
type document struct {
	request object // nil when the input was the params
	params  object
	prompt  []json.RawMessage
}

func parseDocument(input []byte) (*document, error) {
	if !utf8.Valid(input) {
		return nil, notPrompt("not valid UTF-8")
	}
	top, err := parseObject(input)
	if err != nil {
		return nil, notPrompt("%v", err)
	}
	d := &document{params: top}
	if top.has("jsonrpc") || top.has("method") {
		d.request = top
		var version, method string
		if err := top.str("jsonrpc", &version); err != nil || version != "2.0" {
			return nil, notPrompt(`a JSON-RPC request needs "jsonrpc": "2.0"`)
		}
		if err := top.str("method", &method); err != nil || method != "session/prompt" {
			return nil, notPrompt(`the request's method is not "session/prompt"`)
		}
		raw, ok := top.get("params")
		if !ok {
			return nil, notPrompt(`the request has no "params"`)
		}
		if d.params, err = parseObject(raw); err != nil {
			return nil, notPrompt("params: %v", err)
		}
	}
	var session string
	if err := d.params.str("sessionId", &session); err != nil {
		return nil, notPrompt(`"sessionId" must be a string`)
	}
	raw, ok := d.params.get("prompt")
	if !ok {
		return nil, notPrompt(`no "prompt"`)
	}
	if err := json.Unmarshal(raw, &d.prompt); err != nil || raw[0] != '[' {
		return nil, notPrompt(`"prompt" must be an array of content blocks`)
	}
	return d, nil
}

// checkBlock validates one block. It returns the reference it names, nil for a block that passes
// through, or an upload.invalid refusal.
func checkBlock(i int, b object) (*ref, error) {
	var typ string
	if err := b.str("type", &typ); err != nil {
		return nil, invalid(i, `"type" must be a string`)
	}
	var upload, acpmux object
	if raw, ok := b.get(metaKey); ok && !isNull(raw) {
		meta, err := parseObject(raw)
		if err != nil {
			return nil, invalid(i, "_meta: %v", err)
		}
		if raw, ok := meta.get(acpmuxKey); ok {
			if acpmux, err = parseObject(raw); err != nil {
				return nil, invalid(i, "_meta.acpmux: %v", err)
			}
			if acpmux.has(contextKey) {
				return nil, invalid(i, "_meta.acpmux.context is written by resolve, not taken from its input")
			}
			if raw, ok := acpmux.get(uploadKey); ok {
				if upload, err = parseObject(raw); err != nil {
					return nil, invalid(i, "_meta.acpmux.upload: %v", err)
				}
			}
		}
	}
	var uri string
	hasURI := false
	if raw, ok := b.get("uri"); ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &uri); err != nil {
			return nil, invalid(i, `"uri" must be a string`)
		}
		hasURI = true
	}
	switch typ {
	case "resource":
		return nil, invalid(i, "a resource block is refused: files come as uploads")
	case "image":
		if hasURI {
			return nil, invalid(i, "an image with a uri is refused (%.80q)", uri)
		}
		if upload != nil && b.has("data") {
			return nil, invalid(i, "an image that names an upload carries data too")
		}
	case "resource_link":
		if upload == nil && strings.HasPrefix(uri, RefScheme) {
			return nil, invalid(i, "resource_link %.80q names an upload without _meta.acpmux.upload", uri)
		}
	default:
		if upload != nil {
			return nil, invalid(i, "a %q block cannot name an upload: only image and resource_link can", typ)
		}
	}
	if upload == nil {
		return nil, nil
	}
	r := &ref{block: b, typ: typ}
	if raw, ok := upload.get(uploadIDKey); !ok || json.Unmarshal(raw, &r.id) != nil {
		return nil, invalid(i, "_meta.acpmux.upload has no uploadId string")
	}
	if raw, ok := upload.get(fileNameKey); !ok || json.Unmarshal(raw, &r.name) != nil {
		return nil, invalid(i, "upload %.40q: _meta.acpmux.upload has no fileName string", r.id)
	}
	if err := ValidID(r.id); err != nil {
		return nil, invalid(i, "%s", err.(*manifest.Error).Message)
	}
	if err := ValidName(r.name); err != nil {
		return nil, invalid(i, "upload %s: %s", r.id, err.(*manifest.Error).Message)
	}
	if typ == "resource_link" && uri != RefScheme+r.id {
		return nil, invalid(i, "upload %s: resource_link uri %.80q is not %s%s", r.id, uri, RefScheme, r.id)
	}
	return r, nil
}

// headSize is how much of a file MIME detection looks at.
const headSize = 8 << 10

// examine opens the reference's finished upload through the guarded open and sniffs it.
func (s *Store) examine(r *ref, opts ResolveOptions) error {
	m, err := s.ReadMeta(r.id)
	if err != nil {
		return err
	}
	if m.Name != r.name {
		return manifest.Errorf(manifest.UploadMissing, "upload %s: no file %q in it (its file is another)", r.id, r.name)
	}
	f, err := s.OpenFinished(r.id, r.name)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return manifest.Errorf(manifest.UploadUnreadable, "upload %s: %s: %v", r.id, f.Name(), err)
	}
	r.path, r.size = f.Name(), fi.Size()
	if r.size != m.Size {
		return manifest.Errorf(manifest.UploadUnreadable, "upload %s: %s: %d bytes, its metadata says %d", r.id, r.path, r.size, m.Size)
	}
	want := min(r.size, headSize)
	embeddable := opts.Caps.EmbeddedContext && r.size <= opts.EmbedMax
	if embeddable {
		want = r.size
	}
	buf := make([]byte, want)
	if _, err := io.ReadFull(f, buf); err != nil {
		return manifest.Errorf(manifest.UploadUnreadable, "upload %s: %s: %v", r.id, r.path, err)
	}
	r.mime = sniffMime(buf)
	r.image = inlineImageTypes[r.mime]
	r.audio = strings.HasPrefix(r.mime, "audio/")
	if embeddable && !r.image && !r.audio && isText(buf) {
		r.text = buf
	}
	return nil
}

// sniffMime is the media type of content from its head, without parameters. The inline image
// types are told by their magic numbers.
func sniffMime(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(head, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(head, []byte("GIF87a")), bytes.HasPrefix(head, []byte("GIF89a")):
		return "image/gif"
	case len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP":
		return "image/webp"
	}
	if len(head) > headSize {
		head = head[:headSize]
	}
	return baseMime(mimetype.Detect(head).String())
}

// isText: valid UTF-8 from first byte to last, with no NUL.
func isText(b []byte) bool { return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0 }

// fileURI is the file:// URI of an absolute path, escaped where a URI needs it.
func fileURI(path string) string { return (&url.URL{Scheme: "file", Path: path}).String() }

// b64len is the length of the standard padded base64 of n bytes.
func b64len(n int64) int64 { return (n + 2) / 3 * 4 }

// Reasons a native file went by path, as the context block words them.
func reasonOverMax(max int64) string {
	return fmt.Sprintf("larger than the inline limit of %d bytes", max)
}
func reasonOverBudget(budget int64) string {
	return fmt.Sprintf("the prompt's inline files would pass the inline budget of %d bytes", budget)
}
func reasonOverMessage(max int64) string {
	return fmt.Sprintf("inline it would pass the message limit of %d bytes", max)
}

const reasonNoImageCap = "the agent takes no images (no image capability)"

// plan decides how each reference goes and writes the output.
func (s *Store) plan(doc *document, blocks []object, refs []*ref, opts ResolveOptions) (_ *Resolution, err error) {
	res := &Resolution{}
	seen := map[string]bool{}
	// Every reference as a link first: the smallest the message can be.
	linkLen := make([]int64, len(blocks))
	var total int64
	for i, b := range blocks {
		r := refs[i]
		if r == nil {
			linkLen[i] = int64(len(b.marshal()))
		} else {
			if !seen[r.id] {
				seen[r.id] = true
				res.IDs = append(res.IDs, r.id)
			}
			r.out = linkBlock(r)
			linkLen[i] = int64(len(r.out.marshal()))
		}
		total += linkLen[i]
	}
	head, tail, err := doc.frame()
	if err != nil {
		return nil, err
	}
	total += int64(len(head)+len(tail)) + 2 + 1 // [ ] and the newline
	if n := int64(len(blocks)); n > 1 {
		total += n - 1
	}
	if total > opts.MaxMessage {
		return nil, manifest.Errorf(manifest.UploadTooMany,
			"the prompt's %d blocks take %d bytes even with every file by path, more than one message (%d bytes)",
			len(blocks), total, opts.MaxMessage)
	}
	// Room for the context block as if every reference went by path with the longest reason.
	reserve := int64(0)
	worst := len(reasonOverBudget(opts.InlineBudget))
	for _, r := range refs {
		if r != nil {
			reserve += int64(len(contextLine(r, strings.Repeat("x", worst)))) + 8
		}
	}
	reserve += int64(len(contextHeader)+len(noImageLine)) + 80
	if total+reserve > opts.MaxMessage {
		reserve = 0
	}
	// Inline what fits, in prompt order.
	var used int64
	for i, r := range refs {
		if r == nil {
			continue
		}
		native := (r.image && opts.Caps.Image) || (r.audio && opts.Caps.Audio)
		switch {
		case r.image && !opts.Caps.Image:
			r.reason = reasonNoImageCap
		case native && r.size > opts.InlineMax:
			r.reason = reasonOverMax(opts.InlineMax)
		case native && used+r.size > opts.InlineBudget:
			r.reason = reasonOverBudget(opts.InlineBudget)
		case native:
			out := inlineBlock(r)
			n := int64(len(out.marshal())) + b64len(r.size) // the data field is there, empty
			if total-linkLen[i]+n+reserve > opts.MaxMessage {
				r.reason = reasonOverMessage(opts.MaxMessage)
				break
			}
			r.out, r.mode = out, inlineImage
			if r.audio {
				r.mode = inlineAudio
			}
			used += r.size
			total += n - linkLen[i]
			linkLen[i] = n
		case r.text != nil:
			out := embedBlock(r)
			n := int64(len(out.marshal()))
			if total-linkLen[i]+n+reserve > opts.MaxMessage {
				r.text = nil
				break
			}
			r.out, r.mode = out, embedText
			total += n - linkLen[i]
			linkLen[i] = n
		}
	}
	// The context block, listing the by-path files while the message has room.
	ctx, listed := contextBlock(refs, opts, opts.MaxMessage-total-1)
	if ctx != nil {
		total += int64(len(ctx)) + 1
	}
	res.ContextListed = listed

	for _, r := range refs {
		if r == nil {
			continue
		}
		switch r.mode {
		case inlineImage:
			res.Inline++
		case inlineAudio:
			res.Audio++
		case embedText:
			res.Embedded++
		default:
			res.ByPath++
		}
	}
	res.Size, res.s, res.head, res.tail, res.ctx, res.blocks, res.refs = total, s, head, tail, ctx, blocks, refs
	return res, nil
}

// Pieces of the streamed output: inline data is read and encoded a chunk at a time (a multiple of
// 3 bytes, so that only the last chunk of a file is padded) into one output buffer.
const (
	streamChunk  = 48 << 10
	streamBuffer = 256 << 10
)

// WriteTo writes the resolved document to w: compact JSON and a newline, the params or the
// JSON-RPC request with resolved params when the input was a request; Size bytes in all.
//
// The output is never held whole: each inline file is read again through the guarded open as it
// is written, base64-encoded a chunk at a time, so a 13 MB prompt costs a few hundred KiB of
// memory. The uploads are marked used (by Resolve) before anything is written, so a sweep leaves
// them alone. If an inline file is no longer the one Resolve examined (changed in place, which the
// store itself never does), WriteTo stops with an upload.unreadable error after writing part of
// the document; the caller must then not use what it wrote.
func (res *Resolution) WriteTo(w io.Writer) (int64, error) {
	st := &streamer{w: w, buf: make([]byte, 0, streamBuffer)}
	var chunk []byte
	st.put(res.head)
	st.put([]byte{'['})
	for i, b := range res.blocks {
		if i > 0 {
			st.put([]byte{','})
		}
		r := res.refs[i]
		switch {
		case r == nil:
			st.put(b.marshal()) // passes through
		case r.mode == inlineImage || r.mode == inlineAudio:
			pre, post := r.out.around("data")
			st.put(pre)
			if chunk == nil {
				chunk = make([]byte, streamChunk)
			}
			if err := res.s.streamBase64(st, r, chunk); err != nil {
				if st.err != nil {
					return st.n, st.err // w failed
				}
				st.flush()
				return st.n, atBlock(i, err)
			}
			st.put(post)
		default:
			st.put(r.out.marshal())
		}
		if st.err != nil {
			return st.n, st.err
		}
	}
	if res.ctx != nil {
		if len(res.blocks) > 0 {
			st.put([]byte{','})
		}
		st.put(res.ctx)
	}
	st.put([]byte{']'})
	st.put(res.tail)
	st.put([]byte{'\n'})
	st.flush()
	if st.err == nil && st.n != res.Size { // cannot happen: plan counted every byte
		st.err = fmt.Errorf("resolve: wrote %d bytes, planned %d", st.n, res.Size)
	}
	return st.n, st.err
}

// Bytes returns the whole resolved document (see WriteTo).
func (res *Resolution) Bytes() ([]byte, error) {
	var b bytes.Buffer
	b.Grow(int(res.Size))
	_, err := res.WriteTo(&b)
	return b.Bytes(), err
}

// streamBase64 writes the standard base64 of the reference's finished upload, read through the
// guarded open in chunks, and checks that it is the file examine saw: the same size and type.
func (s *Store) streamBase64(st *streamer, r *ref, chunk []byte) error {
	f, err := s.OpenFinished(r.id, r.name)
	if err != nil {
		return err
	}
	defer f.Close()
	changed := manifest.Errorf(manifest.UploadUnreadable, "upload %s: %s changed while it was resolved", r.id, r.path)
	for left := r.size; left > 0; {
		c := chunk[:min(left, int64(len(chunk)))]
		if _, err := io.ReadFull(f, c); err != nil {
			return changed
		}
		if left == r.size && sniffMime(c[:min(len(c), headSize)]) != r.mime {
			return changed
		}
		st.buf = appendBase64(st.room(int(b64len(int64(len(c))))), c)
		if st.err != nil {
			return st.err
		}
		left -= int64(len(c))
	}
	if n, _ := f.Read(chunk[:1]); n != 0 { // longer than it was
		return changed
	}
	return nil
}

// streamer writes the output through one buffer, keeping the first write error.
type streamer struct {
	w   io.Writer
	buf []byte
	n   int64
	err error
}

// room flushes the buffer if n more bytes would not fit, and returns it for appending.
func (st *streamer) room(n int) []byte {
	if len(st.buf)+n > cap(st.buf) {
		st.flush()
	}
	return st.buf
}

func (st *streamer) put(p []byte) { st.buf = append(st.room(len(p)), p...) }

func (st *streamer) flush() {
	if st.err == nil && len(st.buf) > 0 {
		var m int
		m, st.err = st.w.Write(st.buf)
		st.n += int64(m)
	}
	st.buf = st.buf[:0]
}

// frame is the output around the prompt array: the request (if any) and params with the array cut out.
func (d *document) frame() (head, tail []byte, err error) {
	whole := d.params.with("prompt", json.RawMessage(mark)).marshal()
	if d.request != nil {
		whole = d.request.with("params", whole).marshal()
	}
	head, tail, ok := bytes.Cut(whole, []byte(mark))
	if !ok {
		return nil, nil, notPrompt("no prompt")
	}
	return head, tail, nil
}

// mark stands for a value cut out of marshalled output; it cannot occur in valid JSON text.
const mark = "\x00"

// around marshals o and returns what comes before and after the string value of field k, its
// quotes included in them: the value is written between.
func (o object) around(k string) (pre, post []byte) {
	pre, post, _ = bytes.Cut(o.with(k, json.RawMessage(mark)).marshal(), []byte(mark))
	return append(pre, '"'), append([]byte{'"'}, post...)
}

// modelled are the block fields resolve writes itself; the others (annotations, _meta, title,
// description, unknown ones) follow them in input order.
var modelled = map[string]bool{"type": true, "uri": true, "name": true, "mimeType": true, "size": true, "data": true, "resource": true}

// resolved is a block with the fields of head first, then the block's own fields that resolve does
// not model, in input order.
func resolved(block object, head ...field) object {
	o := append(object(nil), head...)
	for _, f := range block {
		if !modelled[f.key] {
			o = append(o, f)
		}
	}
	return o
}

// linkBlock is the by-path block: {"type":"resource_link","uri":"file://…","name","mimeType","size"}
// then the reference's other fields (annotations, _meta, unknown ones).
func linkBlock(r *ref) object {
	return resolved(r.block,
		field{"type", jsonString("resource_link")},
		field{"uri", jsonString(fileURI(r.path))},
		field{"name", jsonString(r.name)},
		field{"mimeType", jsonString(r.mime)},
		field{"size", json.RawMessage(fmt.Sprint(r.size))})
}

// inlineBlock is the inline image or audio block, with an empty "data" to be filled on writing.
func inlineBlock(r *ref) object {
	typ := "image"
	if !r.image {
		typ = "audio"
	}
	return resolved(r.block,
		field{"type", jsonString(typ)},
		field{"mimeType", jsonString(r.mime)},
		field{"data", json.RawMessage(`""`)})
}

// embedBlock is the resource block carrying a small text file's text.
func embedBlock(r *ref) object {
	res, _ := marshal(struct {
		URI      string `json:"uri"`
		MimeType string `json:"mimeType"`
		Text     string `json:"text"`
	}{fileURI(r.path), textMime(r.mime), string(r.text)})
	return resolved(r.block, field{"type", jsonString("resource")}, field{"resource", res})
}

// textMime is the media type of a text file: what was sniffed when it names a text type, else
// text/plain.
func textMime(m string) string {
	if m == "" || m == "application/octet-stream" {
		return "text/plain"
	}
	return m
}

const (
	contextHeader = "These files of the prompt are on disk, by path (open them with your tools):"
	noImageLine   = "The agent takes no images (no image capability), so images go by path."
)

func contextLine(r *ref, reason string) string {
	line := fmt.Sprintf("\n- %s (%s, %d bytes)", r.path, r.mime, r.size)
	if reason != "" {
		line += ": by path, " + reason
	}
	return line
}

// contextBlock is the text block with _meta.acpmux.context true that lists the by-path files, as
// many as fit in room bytes; nil when no file goes by path or not even its header fits.
func contextBlock(refs []*ref, opts ResolveOptions, room int64) ([]byte, int) {
	var byPath []*ref
	images := false
	for _, r := range refs {
		if r != nil && r.mode == modePath {
			byPath = append(byPath, r)
			images = images || r.image
		}
	}
	if len(byPath) == 0 {
		return nil, 0
	}
	text := contextHeader
	if images && !opts.Caps.Image {
		text += "\n" + noImageLine
	}
	wrap := func(t string) []byte {
		b, _ := marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
			Meta any    `json:"_meta"`
		}{"text", t, map[string]any{acpmuxKey: map[string]bool{contextKey: true}}})
		return b
	}
	base := int64(len(wrap(text)))
	if base > room {
		return nil, 0
	}
	esc := func(s string) int64 { b, _ := marshal(s); return int64(len(b)) - 2 }
	var sb strings.Builder
	sb.WriteString(text)
	n := base
	listed := 0
	for i, r := range byPath {
		line := contextLine(r, r.reason)
		more := fmt.Sprintf("\n- and %d more by path: see the resource_link blocks", len(byPath)-i)
		need := esc(line)
		if i < len(byPath)-1 {
			need += esc(fmt.Sprintf("\n- and %d more by path: see the resource_link blocks", len(byPath)))
		}
		if n+need > room {
			sb.WriteString(more)
			break
		}
		sb.WriteString(line)
		n += esc(line)
		listed++
	}
	return wrap(sb.String()), listed
}

func jsonString(s string) json.RawMessage {
	b, _ := marshal(s)
	return b
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// object is a JSON object with its fields in order and their values raw, so that what resolve
// does not model passes through byte for byte.
type object []field

type field struct {
	key string
	val json.RawMessage
}

// parseObject reads one JSON object. Duplicate keys are refused: untrusted input could otherwise
// mean one thing here and another to the agent.
func parseObject(raw []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	t, err := dec.Token()
	if err != nil {
		return nil, describeJSON(err)
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	o := object{}
	seen := map[string]bool{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, describeJSON(err)
		}
		key := kt.(string)
		if seen[key] {
			return nil, fmt.Errorf("key %q appears twice", key)
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, describeJSON(err)
		}
		var c bytes.Buffer // one line out, whatever the input's layout
		if err := json.Compact(&c, v); err != nil {
			return nil, describeJSON(err)
		}
		o = append(o, field{key, c.Bytes()})
	}
	if _, err := dec.Token(); err != nil {
		return nil, describeJSON(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return o, nil
}

func describeJSON(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("not JSON: unexpected end")
	}
	return fmt.Errorf("not JSON: %v", err)
}

func (o object) get(k string) (json.RawMessage, bool) {
	for _, f := range o {
		if f.key == k {
			return f.val, true
		}
	}
	return nil, false
}

func (o object) has(k string) bool { _, ok := o.get(k); return ok }

// str reads field k as a string.
func (o object) str(k string, s *string) error {
	raw, ok := o.get(k)
	if !ok {
		return fmt.Errorf("no %q", k)
	}
	return json.Unmarshal(raw, s)
}

func (o object) clone() object { return append(object(nil), o...) }

// set replaces field k in place, or appends it.
func (o *object) set(k string, v json.RawMessage) {
	for i := range *o {
		if (*o)[i].key == k {
			(*o)[i].val = v
			return
		}
	}
	*o = append(*o, field{k, v})
}

func (o object) with(k string, v json.RawMessage) object {
	c := o.clone()
	c.set(k, v)
	return c
}

func (o *object) del(k string) {
	for i := range *o {
		if (*o)[i].key == k {
			*o = append((*o)[:i], (*o)[i+1:]...)
			return
		}
	}
}

// marshal is the object as compact JSON.
func (o object) marshal() []byte {
	b := []byte{'{'}
	for i, f := range o {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, jsonString(f.key)...)
		b = append(b, ':')
		b = append(b, f.val...)
	}
	return append(b, '}')
}
