package acp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode"

	"github.com/attachctl/attachctl/manifest"
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

const (
	reasonNoImageCap = "the agent takes no images (no image capability)"
	reasonNoAudioCap = "the agent takes no audio (no audio capability)"
	reasonNoEmbedCap = "a text file, and the agent takes no embedded files (no embeddedContext capability)"
)

// reason is why r cannot go inline whatever the room in the message: a missing capability or a
// size limit. "" for a file that may go inline if it fits, and for one that never could (no
// image, audio or text).
func (r *ref) staticReason(opts Options) string {
	switch {
	case r.image && !opts.Caps.Image:
		return reasonNoImageCap
	case r.kind == manifest.KindAudio && !opts.Caps.Audio:
		return reasonNoAudioCap
	case r.image || r.kind == manifest.KindAudio:
		if r.size > opts.InlineMax {
			return reasonOverMax(opts.InlineMax)
		}
	case r.kind == manifest.KindImage:
		return reasonNotInlineType(r.mime)
	case r.kind == manifest.KindText && !opts.Caps.EmbeddedContext:
		return reasonNoEmbedCap
	case r.kind == manifest.KindText && r.size > opts.EmbedMax:
		return reasonOverEmbed(opts.EmbedMax)
	}
	return ""
}

// plan decides how each reference goes and sizes the output.
func plan(doc *document, blocks []object, refs []*ref, opts Options) (*Resolution, error) {
	res := &Resolution{}
	seen := map[string]bool{}
	// Every reference as a link first: the smallest the message can be.
	linkLen := make([]int64, len(blocks))
	var total int64
	nrefs := 0
	for i, b := range blocks {
		r := refs[i]
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
	if n := int64(len(blocks)); n > 1 {
		total += n - 1
	}
	// The context block is there whenever a file goes by path: at the least its header and
	// "and N more", which a prompt of links alone must leave room for.
	least := int64(0)
	if nrefs > 0 {
		least = int64(len(contextJSON(contextHead(true)+moreLine(nrefs)))) + 1
	}
	if total+least > opts.MaxMessage {
		return nil, manifest.Errorf(manifest.UploadTooMany,
			"the prompt's %d blocks take %d bytes even with every file by path (and %d for the context block), more than one message (%d bytes)",
			len(blocks), total, least, opts.MaxMessage)
	}
	// Room for the whole context block as if every reference went by path with the longest
	// reason, when the message has it: inlining then never crowds a path out of the list.
	reserve := least
	worst := len(reasonOverBudget(opts.InlineBudget))
	full := least
	for _, r := range refs {
		if r != nil {
			full += int64(len(contextLine(r, strings.Repeat("x", worst)))) + 8
		}
	}
	if total+full <= opts.MaxMessage {
		reserve = full
	}
	// Inline what fits, in prompt order.
	var used int64
	for i, r := range refs {
		if r == nil {
			continue
		}
		if r.reason = r.staticReason(opts); r.reason != "" {
			continue
		}
		var out object
		switch {
		case r.image || r.kind == manifest.KindAudio:
			if used+r.size > opts.InlineBudget {
				r.reason = reasonOverBudget(opts.InlineBudget)
				continue
			}
			out = inlineBlock(r)
		case r.text != nil:
			out = embedBlock(r)
		default:
			continue // never inline: by path with no reason to give
		}
		n := int64(len(out.marshal()))
		if r.text == nil {
			n += b64len(r.size) // the data field is there, empty
		}
		if total-linkLen[i]+n+reserve > opts.MaxMessage {
			r.reason = reasonOverMessage(opts.MaxMessage)
			continue
		}
		r.out = out
		switch {
		case r.text != nil:
			r.mode = embedText
		case r.image:
			r.mode = inlineImage
			used += r.size
		default:
			r.mode = inlineAudio
			used += r.size
		}
		total += n - linkLen[i]
		linkLen[i] = n
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
		field{"uri", jsonString(fileURI(r.link))},
		field{"name", jsonString(r.name)},
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
		field{"mimeType", jsonString(r.mime)},
		field{"data", json.RawMessage(`""`)})
}

// embedBlock is the resource block carrying a small text file's text.
func embedBlock(r *ref) object {
	res, _ := marshal(struct {
		URI      string `json:"uri"`
		MimeType string `json:"mimeType"`
		Text     string `json:"text"`
	}{fileURI(r.link), r.mime, string(r.text)})
	return resolved(r, field{"type", jsonString("resource")}, field{"resource", res})
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
func contextLine(r *ref, reason string) string {
	line := fmt.Sprintf("\n- %s (%s, %d bytes)", escapePath(r.link), r.mime, r.size)
	if reason != "" {
		line += ": by path, " + reason
	}
	return line
}

// escapePath is p as it is when every character is printable and it has no backslash and no
// leading quote, else p quoted as a Go string ("a\nb"), whose escapes keep it on one line.
func escapePath(p string) string {
	if strings.HasPrefix(p, `"`) || strings.ContainsRune(p, '\\') || strings.IndexFunc(p, func(c rune) bool { return !unicode.IsPrint(c) }) >= 0 {
		return strconv.Quote(p)
	}
	return p
}

// contextJSON is the text block marked _meta.acpmux.context that carries text.
func contextJSON(text string) []byte {
	b, _ := marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
		Meta any    `json:"_meta"`
	}{"text", text, map[string]any{acpmuxKey: map[string]bool{contextKey: true}}})
	return b
}

// contextBlock is the text block with _meta.acpmux.context true that lists the by-path files, as
// many as fit in room bytes, then "and N more"; nil when no file goes by path. plan has left room
// for its header and the last line.
func contextBlock(refs []*ref, opts Options, room int64) ([]byte, int) {
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
	text := contextHead(images && !opts.Caps.Image)
	n := int64(len(contextJSON(text)))
	esc := func(s string) int64 { b, _ := marshal(s); return int64(len(b)) - 2 }
	var sb strings.Builder
	sb.WriteString(text)
	listed := 0
	for i, r := range byPath {
		line := contextLine(r, r.reason)
		need := esc(line)
		if i < len(byPath)-1 {
			need += esc(moreLine(len(byPath) - i - 1))
		}
		if n+need > room {
			sb.WriteString(moreLine(len(byPath) - i))
			break
		}
		sb.WriteString(line)
		n += esc(line)
		listed++
		if r.folder != nil { // its tree, in the room the lines of the files after it leave
			rest := int64(0)
			for _, o := range byPath[i+1:] {
				rest += esc(contextLine(o, o.reason))
			}
			tree, k := treeLines(r, room-n-rest, esc)
			sb.WriteString(tree)
			n += k
		}
	}
	return contextJSON(sb.String()), listed
}
