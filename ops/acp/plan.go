package acp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
)

// fileURI is the file:// URI of an absolute path, escaped where a URI needs it.
func fileURI(path string) string { return (&url.URL{Scheme: "file", Path: path}).String() }

// b64len is the length of the standard padded base64 of n bytes.
func b64len(n int64) int64 { return (n + 2) / 3 * 4 }

// Reasons a file that could have gone inline went by path, as the context block words them.
func reasonOverMax(max int64) string {
	return fmt.Sprintf("larger than the inline limit of %d bytes", max)
}
func reasonOverBudget(budget int64) string {
	return fmt.Sprintf("the prompt's inline files would pass the inline budget of %d bytes", budget)
}
func reasonOverMessage(max int64) string {
	return fmt.Sprintf("inline it would pass the message limit of %d bytes", max)
}
func reasonOverEmbed(max int64) string {
	return fmt.Sprintf("a text file larger than the embedding limit of %d bytes", max)
}
func reasonNotInlineType(mime string) string {
	return fmt.Sprintf("%s is not an image type models take inline (PNG, JPEG, GIF, WebP)", mime)
}

// reasonImageCount is why an image past the model's count of images a request went by path.
func reasonImageCount(m *Model) string {
	if m == nil || m.MaxImages == 0 {
		return ""
	}
	return fmt.Sprintf("%s takes at most %d images in one request", m.Name, m.MaxImages)
}

const (
	reasonNoImageCap = "the agent takes no images (no image capability)"
	reasonNoAudioCap = "the agent takes no audio (no audio capability)"
	reasonNoEmbedCap = "a text file, and the agent takes no embedded files (no embeddedContext capability)"
)

// staticReason is why r cannot go inline whatever the room in the message, and the layer that
// decided it: a missing capability (protocol), what the adapter drops (adapter), a size limit
// (limits) or what the model takes (model, images counts the prompt's would-be inline images).
// "" for a file that may go inline if it fits, and for one that never could (no image, audio or
// text).
func (r *ref) staticReason(opts Options, images int) (layer, reason string) {
	a, m := opts.Adapter, opts.Model
	switch {
	case r.doc != nil:
		return r.docReason(opts)
	case r.image && !opts.Caps.Image:
		return layerProtocol, reasonNoImageCap
	case r.image && a != nil && !a.Passes.Image:
		return layerAdapter(a), fmt.Sprintf("%s passes no image on to its model", a.Name)
	case r.kind == manifest.KindAudio && !opts.Caps.Audio:
		return layerProtocol, reasonNoAudioCap
	case r.kind == manifest.KindAudio && a != nil && !a.Passes.Audio:
		return layerAdapter(a), fmt.Sprintf("%s drops audio blocks", a.Name)
	case r.image && r.undecodable != "":
		return layerFormat, reasonUndecodable(r)
	case r.image || r.kind == manifest.KindAudio:
		if r.dataSize() > opts.InlineMax {
			return layerLimits, reasonOverMax(opts.InlineMax)
		}
		if m != nil {
			if why := r.fitReason(m, images); why != "" {
				return layerModel(m), why
			}
		}
	case r.kind == manifest.KindImage:
		return layerFormat, reasonNotInlineType(r.mime)
	case r.kind == manifest.KindText && !opts.Caps.EmbeddedContext:
		return layerProtocol, reasonNoEmbedCap
	case r.kind == manifest.KindText && a != nil && !a.Passes.EmbeddedContext:
		return layerAdapter(a), fmt.Sprintf("a text file, and %s is fed no embedded files", a.Name)
	case r.kind == manifest.KindText && r.size > opts.EmbedMax:
		return layerLimits, reasonOverEmbed(opts.EmbedMax)
	}
	return "", ""
}

// uriFor is the uri of a link to the file at path: a file:// URI escaped where a URI needs it,
// or, for an adapter that opens the path itself without decoding, the path as it is.
func uriFor(path string, opts Options) string {
	if opts.Adapter != nil && opts.Adapter.RawURIs {
		return "file://" + path
	}
	return fileURI(path)
}

// plan decides how each reference goes and sizes the output.
func plan(doc *document, blocks []object, refs []*ref, opts Options) (*Resolution, error) {
	res := &Resolution{}
	seen := map[string]bool{}
	// Every reference as a link first: the smallest the message can be.
	linkLen := make([]int64, len(blocks))
	var total int64
	nrefs := 0
	// What each layer says, whatever the room: the model's count rules need the number of
	// images that would go inline.
	images := 0
	for _, r := range refs {
		if r != nil {
			r.uri = uriFor(r.link, opts)
			if _, why := r.staticReason(opts, 0); why == "" && r.image {
				images++
			}
		}
	}
	for _, r := range refs {
		if r != nil {
			r.layer, r.reason = r.staticReason(opts, images)
		}
	}
	nblocks := int64(0)
	for i, b := range blocks {
		r := refs[i]
		if r != nil && r.child() {
			continue // a folder's image: no block unless it goes inline
		}
		nblocks++
		if r == nil {
			linkLen[i] = int64(len(b.marshal()))
		} else {
			nrefs++
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
	if nblocks > 1 {
		total += nblocks - 1
	}
	// The context block is there whenever a file goes by path: at the least its header and
	// "and N more", which a prompt of links alone must leave room for.
	least := int64(0)
	if nrefs > 0 {
		least = int64(len(contextJSON(contextHead(true)+moreLine(nrefs)))) + 1
	}
	if total+least > opts.MaxMessage {
		return nil, fault.Errorf(fault.UploadTooMany,
			"the prompt's %d blocks take %d bytes even with every file by path (and %d for the context block), more than one message (%d bytes)",
			len(blocks), total, least, opts.MaxMessage)
	}
	// Room for the whole context block as if every reference went by path with the longest
	// reason, when the message has it: inlining then never crowds a path out of the list.
	reserve := least
	worst := max(len(reasonOverBudget(opts.InlineBudget)), len(reasonOverMessage(opts.MaxMessage)), len(reasonImageCount(opts.Model)),
		len(reasonOverTokens(opts.MaxTokens)), len(reasonOverRequest(opts.Model)))
	full := least
	for _, r := range refs {
		if r != nil && !r.child() {
			r.line = contextLine(r, strings.Repeat("x", max(worst, len(r.reason))), strings.Repeat("x", max(len(r.layer), len(layerLimits))))
			full += int64(len(r.line)) + 8
			if r.doc != nil {
				full += 128 // what its line says of its text and pages
			}
		}
	}
	if total+full <= opts.MaxMessage {
		reserve = full
	}
	// Inline what fits, in prompt order.
	var used, docUsed int64
	inlined := 0 // images
	for i, r := range refs {
		if r == nil || r.reason != "" {
			continue
		}
		if r.doc != nil && r.doc.hasText() && !r.doc.reads {
			tokens := int64(-1)
			if opts.MaxTokens > 0 {
				tokens = max(0, opts.MaxTokens-res.Tokens)
			}
			out, n, why := planDoc(r, opts, opts.Docs.Max-docUsed, tokens, func(n int64) bool {
				return total-linkLen[i]+n+reserve <= opts.MaxMessage
			})
			if why != "" {
				r.layer, r.reason = layerLimits, why
				continue
			}
			r.out, r.mode = out, docText
			docUsed += r.doc.textLen
			res.Tokens += textTokens(r.doc.textLen)
			total += n - linkLen[i]
			linkLen[i] = n
			continue
		}
		var out object
		switch {
		case r.image || r.kind == manifest.KindAudio:
			if used+r.dataSize() > opts.InlineBudget {
				r.layer, r.reason = layerLimits, reasonOverBudget(opts.InlineBudget)
				continue
			}
			if m := opts.Model; r.image && m != nil && m.MaxImages > 0 && inlined >= m.MaxImages {
				r.layer, r.reason = layerModel(m), reasonImageCount(m)
				continue
			}
			out = inlineBlock(r)
			if r.parent != nil { // which file of the folder it is
				out = append(out, field{"uri", jsonString(r.uri)})
			}
		case r.text != nil:
			out = embedBlock(r)
		default:
			continue // never inline: by path with no reason to give
		}
		n := int64(len(out.marshal()))
		if r.text == nil {
			n += b64len(r.dataSize()) + nameCost(r) // the data field is there, empty; its name block
		}
		if r.child() && nblocks > 0 {
			n++ // a folder's image is a block more, and its comma
		}
		if total-linkLen[i]+n+reserve > opts.MaxMessage {
			r.layer, r.reason = layerLimits, reasonOverMessage(opts.MaxMessage)
			continue
		}
		if layer, why := requestLimit(r, opts, total-linkLen[i]+n+reserve, res.Tokens); why != "" {
			r.layer, r.reason = layer, why
			continue
		}
		r.out = out
		switch {
		case r.text != nil:
			r.mode = embedText
		case r.image:
			r.mode = inlineImage
			used += r.dataSize()
			inlined++
			res.Tokens += r.tokens(opts.Model)
			if r.fitted != nil {
				res.Shrunk++
			}
		default:
			r.mode = inlineAudio
			used += r.dataSize()
		}
		total += n - linkLen[i]
		linkLen[i] = n
	}
	// An adapter that drops every image and audio block of a prompt that holds a link: the
	// by-path files go as text blocks naming their paths (shorter than the links they replace).
	if a := opts.Adapter; a != nil && a.NoLinksWithMedia && (res.mediaInline(refs)) {
		for i, r := range refs {
			if r != nil && r.mode == modePath && !r.child() {
				if res.textPaths == nil {
					res.textPaths = map[int]bool{}
				}
				res.textPaths[i] = true
				r.out = pathTextBlock(r, a)
				n := int64(len(r.out.marshal()))
				total += n - linkLen[i]
				linkLen[i] = n
			}
		}
	}
	// The context block, listing the by-path files while the message has room.
	ctx, listed := contextBlock(refs, opts, opts.MaxMessage-total-1)
	if ctx != nil {
		total += int64(len(ctx)) + 1
	}
	res.ContextListed = listed

	for _, r := range refs {
		if r == nil || !emitted(r) {
			continue // a folder's image that stays in the folder is counted with it
		}
		switch r.mode {
		case inlineImage:
			res.Inline++
			if r.of != nil {
				res.DocPages++
			}
		case inlineAudio:
			res.Audio++
		case embedText:
			res.Embedded++
		case docText:
			res.Documents++
		default:
			res.ByPath++
		}
	}
	res.Size, res.head, res.tail, res.ctx, res.blocks, res.refs = total, head, tail, ctx, blocks, refs
	return res, nil
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

// resolved is a block with the fields of head first, then the reference's kept fields.
func resolved(r *ref, head ...field) object {
	return append(append(object(nil), head...), r.rest...)
}

// linkBlock is the by-path block: {"type":"resource_link","uri":"file://…","name","mimeType","size"}
// then the reference's other fields (annotations, _meta, unknown ones).
func linkBlock(r *ref) object {
	return resolved(r,
		field{"type", jsonString("resource_link")},
		field{"uri", jsonString(r.uri)},
		field{"name", jsonString(r.linkName())},
		field{"mimeType", jsonString(r.mime)},
		field{"size", json.RawMessage(strconv.FormatInt(r.size, 10))})
}

// inlineBlock is the inline image or audio block, with an empty "data" to be filled on writing.
func inlineBlock(r *ref) object {
	typ := "image"
	if !r.image {
		typ = "audio"
	}
	return resolved(r,
		field{"type", jsonString(typ)},
		field{"mimeType", jsonString(r.dataMime())},
		field{"data", json.RawMessage(`""`)})
}

// embedBlock is the resource block carrying a small text file's text.
func embedBlock(r *ref) object {
	res, _ := marshal(struct {
		URI      string `json:"uri"`
		MimeType string `json:"mimeType"`
		Text     string `json:"text"`
	}{r.uri, baseMime(r.mime), string(r.text)}) // the text is UTF-8 whatever the file's charset
	return resolved(r, field{"type", jsonString("resource")}, field{"resource", res})
}

// pathTextBlock stands for a by-path file where a link would make the adapter drop the prompt's
// images: a text block naming its path, with the reference's annotations and _meta.
func pathTextBlock(r *ref, a *Adapter) object {
	what := "Attached file"
	if r.each != "" { // its place in the folder, which the path's base name does not say
		what += " " + escapePath(r.each)
	}
	o := object{{"type", jsonString("text")}, {"text", jsonString(fmt.Sprintf("%s, on disk at %s (%s, %d bytes)", what, escapePath(r.link), r.mime, r.size))}}
	for _, f := range r.rest {
		if f.key == "annotations" || f.key == metaKey {
			o = append(o, f)
		}
	}
	return o
}

// mediaInline reports whether any image or audio goes inline.
func (res *Resolution) mediaInline(refs []*ref) bool {
	for _, r := range refs {
		if r != nil && (r.mode == inlineImage || r.mode == inlineAudio) {
			return true
		}
	}
	return false
}

const (
	contextHeader = "These files of the prompt are on disk, by path (open them with your tools):"
	noImageLine   = "The agent takes no images (no image capability), so images go by path."
)

// contextHead is the context block's text before its list.
func contextHead(noImages bool) string {
	if noImages {
		return contextHeader + "\n" + noImageLine
	}
	return contextHeader
}

func moreLine(n int) string { return fmt.Sprintf("\n- and %d more", n) }

// contextLine lists one by-path file: its path (escaped when it is not plain printable text, so
// that one path is one line), type, size and the reason it is not inline.
func contextLine(r *ref, reason, layer string) string {
	line := fmt.Sprintf("\n- %s (%s, %d bytes)", escapePath(r.link), r.mime, r.size)
	switch {
	case r.mode == embedText:
		line += ": its text is embedded in this prompt; this is the file"
	case r.mode == docText || r.doc != nil && docNote(r) != "":
		line += docNote(r) + "; this is the file"
	case r.mode != modePath && r.copy == copyNone:
		line += ": inline in this prompt too" + shrunkNote(r) + "; this is the file"
	case r.mode != modePath:
		line += ": inline in this prompt too" + shrunkNote(r) + "; this is its copy on disk"
	case reason != "":
		line += ": by path, " + reason
		if layer != "" {
			line += " (" + layer + ")"
		}
	}
	if r.copy == copyChanged {
		line += "; " + changedNote(r)
	}
	return line
}

// changedNote says that the work folder's copy is not the upload any more, and how to get it.
func changedNote(r *ref) string {
	return fmt.Sprintf("changed on disk since it was attached (left as it is); the original is upload %s: remove this copy and resolve again to restore it", r.id)
}

// escapePath is p exactly as it is, unless it holds a line break, a control character or a
// bidi override: then quoted (manifest.Quote), so that one path is one line and reads true.
func escapePath(p string) string { return manifest.Quote(p) }

// contextJSON is the text block marked _meta.acpmux.context that carries text.
func contextJSON(text string) []byte {
	b, _ := marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
		Meta any    `json:"_meta"`
	}{"text", text, map[string]any{acpmuxKey: map[string]bool{contextKey: true}}})
	return b
}
