package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"unicode/utf8"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// document is the parsed input: the params, and the request around them if there was one.
type document struct {
	request object // nil when the input was the params
	params  object
	prompt  []json.RawMessage
}

// frameError codes a problem with the request or params: a key in another case is upload.invalid,
// the rest (a key twice included) means the input is not a prompt.
func frameError(where string, err error) error {
	if ke, ok := err.(*keyError); ok && ke.known != "" {
		return fault.Errorf(fault.UploadInvalid, "%s: %v", where, err)
	}
	return notPrompt("%s: %v", where, err)
}

// isManifest reports whether input's first line is a manifest record, which users give resolve
// by mistake: an object with a "path" and none of the prompt's keys. It only names the mistake;
// what is not a prompt is refused anyway.
func isManifest(input []byte) bool {
	line, _, _ := bytes.Cut(input, []byte("\n"))
	var keys map[string]json.RawMessage
	if json.Unmarshal(line, &keys) != nil {
		return false
	}
	_, path := keys["path"]
	_, session := keys["sessionId"]
	_, prompt := keys["prompt"]
	_, rpc := keys["jsonrpc"]
	return path && !session && !prompt && !rpc
}

func parseDocument(input []byte) (*document, error) {
	if !utf8.Valid(input) {
		return nil, notPrompt("not valid UTF-8")
	}
	if isManifest(input) {
		return nil, notPrompt("a manifest (JSON Lines of records), not a prompt: attachctl prompt turns it into one (attachctl prompt < manifest.jsonl | attachctl resolve)")
	}
	top, err := parseObject(input, "params", "prompt")
	if err != nil {
		return nil, frameError("the document", err)
	}
	d := &document{params: top}
	request := top.has("jsonrpc") || top.has("method")
	if k := map[bool]string{true: "prompt", false: "params"}[request]; top.has(k) {
		raw, _ := top.get(k)
		if err := walkKeys(raw, k); err != nil { // not parsed as a part of the prompt
			return nil, frameError("the document", err)
		}
	}
	if request {
		d.request = top
		var version, method string
		if err := top.str("jsonrpc", &version); err != nil || version != "2.0" {
			return nil, notPrompt(`a JSON-RPC request needs "jsonrpc": "2.0"`)
		}
		if err := top.str("method", &method); err != nil || method != "session/prompt" {
			return nil, notPrompt(`the request's method is not "session/prompt"`)
		}
		if raw, ok := top.get("id"); ok && jsonKind(raw) != "string" && jsonKind(raw) != "number" && jsonKind(raw) != "null" {
			return nil, notPrompt(`the request's "id" is not a string, number or null`)
		}
		raw, ok := top.get("params")
		if !ok {
			return nil, notPrompt(`the request has no "params"`)
		}
		if d.params, err = parseObject(raw, "prompt"); err != nil {
			return nil, frameError("params", err)
		}
	}
	var session string
	if err := d.params.str("sessionId", &session); err != nil {
		return nil, notPrompt(`"sessionId" must be a string`)
	}
	if raw, ok := d.params.get(metaKey); ok && !isNull(raw) && jsonKind(raw) != "object" {
		return nil, notPrompt(`the params' "_meta" must be an object`)
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

// checkBlocks parses and checks every block of the prompt. It returns the blocks, and per block
// the reference it names (nil for one that passes through), or an error that joins every refusal.
func checkBlocks(prompt []json.RawMessage) ([]object, []*ref, error) {
	blocks := make([]object, len(prompt))
	refs := make([]*ref, len(prompt))
	var errs []error
	var resources, contexts []int // blocks that pass only in resolve's own output
	for i, raw := range prompt {
		if raw[0] != '{' {
			return nil, nil, notPrompt("prompt block %d: not a JSON object", i)
		}
		b, err := parseObject(raw)
		if err != nil {
			if isKeyError(err) {
				errs = append(errs, invalid(i, "%v", err))
				continue
			}
			return nil, nil, notPrompt("prompt block %d: %v", i, err)
		}
		blocks[i] = b
		r, ctx, err := checkBlock(i, b)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		refs[i] = r
		if ctx {
			contexts = append(contexts, i)
		}
		if r == nil && blockType(b) == "resource" {
			resources = append(resources, i)
		}
	}
	// Resolve's own output names no upload: its embedded files and its context block (the last
	// block) pass through again unchanged. Next to a reference they are refused: files come as
	// uploads, and the context block is resolve's to write.
	named := false
	for _, r := range refs {
		named = named || r != nil
	}
	for _, i := range resources {
		if named {
			errs = append(errs, invalid(i, "a resource block is refused: files come as uploads"))
		}
	}
	for _, i := range contexts {
		switch {
		case named:
			errs = append(errs, invalid(i, "_meta.acpmux.context is written by resolve, not taken from its input"))
		case i != len(prompt)-1:
			errs = append(errs, invalid(i, "_meta.acpmux.context marks resolve's context block, which comes last"))
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	return blocks, refs, nil
}

func blockType(b object) string {
	var t string
	b.str("type", &t)
	return t
}

// checkBlock validates one block. It returns the reference it names, nil for a block that passes
// through, whether it is marked as a context block, or an upload.invalid refusal.
func checkBlock(i int, b object) (r *ref, context bool, err error) {
	var typ string
	if err := b.str("type", &typ); err != nil {
		return nil, false, invalid(i, `"type" must be a string`)
	}
	var meta, acpmux, upload object
	if raw, ok := b.get(metaKey); ok && !isNull(raw) {
		if meta, err = parseObject(raw); err != nil {
			return nil, false, invalid(i, "_meta: %v", err)
		}
		if raw, ok := meta.get(acpmuxKey); ok {
			if acpmux, err = parseObject(raw); err != nil {
				return nil, false, invalid(i, "_meta.acpmux: %v", err)
			}
			context = acpmux.has(contextKey)
			if raw, ok := acpmux.get(uploadKey); ok {
				if upload, err = parseObject(raw); err != nil {
					return nil, false, invalid(i, "_meta.acpmux.upload: %v", err)
				}
			}
		}
	}
	var uri string
	hasURI := false
	if raw, ok := b.get("uri"); ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &uri); err != nil {
			return nil, false, invalid(i, `"uri" must be a string`)
		}
		hasURI = true
	}
	if context && (typ != "text" || upload != nil) {
		return nil, false, invalid(i, "_meta.acpmux.context marks resolve's context text block, not a %q block", typ)
	}
	switch typ {
	case "image":
		if hasURI {
			return nil, false, invalid(i, "an image with a uri is refused (%.80q)", uri)
		}
		if upload != nil && b.has("data") {
			return nil, false, invalid(i, "an image that names an upload carries data too")
		}
	case "resource_link":
		if upload == nil && strings.HasPrefix(uri, RefScheme) {
			return nil, false, invalid(i, "resource_link %.80q names an upload without _meta.acpmux.upload", uri)
		}
	default:
		if upload != nil {
			return nil, false, invalid(i, "a %q block cannot name an upload: only image and resource_link can", typ)
		}
	}
	if why := shapeError(b, typ, upload != nil); why != "" {
		return nil, false, invalid(i, "not an ACP content block: %s", why)
	}
	if upload == nil {
		return nil, context, nil
	}
	r = &ref{typ: typ}
	if raw, ok := upload.get(uploadIDKey); !ok || json.Unmarshal(raw, &r.id) != nil {
		return nil, false, invalid(i, "_meta.acpmux.upload has no uploadId string")
	}
	if raw, ok := upload.get(fileNameKey); !ok || json.Unmarshal(raw, &r.name) != nil {
		return nil, false, invalid(i, "upload %.40q: _meta.acpmux.upload has no fileName string", r.id)
	}
	if err := store.ValidID(r.id); err != nil {
		return nil, false, invalid(i, "%s", err.(*fault.Error).Message)
	}
	if err := store.ValidName(r.name); err != nil {
		return nil, false, invalid(i, "upload %s: %s", r.id, err.(*fault.Error).Message)
	}
	if raw, ok := upload.get(relKey); ok && !isNull(raw) { // an --each record's path in its folder
		if json.Unmarshal(raw, &r.each) != nil {
			return nil, false, invalid(i, "upload %s: _meta.acpmux.upload.rel must be a string", r.id)
		}
		if why := relError(r.each); why != "" {
			return nil, false, invalid(i, "upload %s: _meta.acpmux.upload.rel %.80q %s", r.id, r.each, why)
		}
	}
	if typ == "resource_link" && uri != RefScheme+r.id {
		return nil, false, invalid(i, "upload %s: resource_link uri %.80q is not %s%s", r.id, uri, RefScheme, r.id)
	}
	r.rest = keptFields(b, meta, acpmux)
	return r, false, nil
}

// modelled are the block fields resolve writes itself; the others (annotations, _meta, title,
// description, unknown ones) follow them in input order.
var modelled = map[string]bool{"type": true, "uri": true, "name": true, "mimeType": true, "size": true, "data": true, "resource": true}

// keptFields are the fields of a reference block that its resolved block keeps: those resolve does
// not model, in input order, with _meta.acpmux.upload taken out. An acpmux or _meta object left
// empty by that goes too; one that was empty already stays.
func keptFields(b, meta, acpmux object) object {
	var o object
	for _, f := range b {
		if modelled[f.key] {
			continue
		}
		if f.key == metaKey && acpmux != nil {
			m := meta
			if rest := acpmux.without(uploadKey); len(rest) > 0 {
				m = meta.with(acpmuxKey, rest.marshal())
			} else {
				m = meta.without(acpmuxKey)
			}
			if len(m) == 0 {
				continue
			}
			f.val = m.marshal()
		}
		o = append(o, f)
	}
	return o
}

// shapeError checks a block against ACP v1's ContentBlock schema, for the fields that reach the
// output: every field of a block that passes through, the kept fields of a reference. It returns
// why the block is not one, or "".
func shapeError(b object, typ string, isRef bool) string {
	want := map[string]string{metaKey: "object|null", "annotations": "annotations"}
	if isRef {
		// A reference may go out as a resource_link, whose title is a string.
		want["title"] = "string|null"
	} else {
		switch typ {
		case "text":
			want["text"] = "string!"
		case "image", "audio":
			want["data"], want["mimeType"] = "string!", "string!"
		case "resource_link":
			want["uri"], want["name"] = "string!", "string!"
			want["mimeType"], want["title"], want["size"] = "string|null", "string|null", "integer|null"
		case "resource":
			want["resource"] = "resource!"
		default:
			return fmt.Sprintf("type %.40q is none of text, image, audio, resource_link, resource", typ)
		}
	}
	for k, w := range want {
		raw, ok := b.get(k)
		if !ok {
			if strings.HasSuffix(w, "!") {
				return fmt.Sprintf("a %s block needs %q", typ, k)
			}
			continue
		}
		if why := valueError(raw, strings.TrimSuffix(w, "!")); why != "" {
			return fmt.Sprintf("%q %s", k, why)
		}
	}
	return ""
}

// valueError checks one value against a type: a JSON type, "a|b", "integer", or "annotations"
// and "resource" for ACP's objects of those names.
func valueError(raw json.RawMessage, want string) string {
	got := jsonKind(raw)
	for _, w := range strings.Split(want, "|") {
		switch {
		case w == got:
			return ""
		case w == "integer" && got == "number":
			if n, ok := new(big.Rat).SetString(string(raw)); ok && n.IsInt() {
				return ""
			}
		case w == "annotations" && (got == "null" || got == "object"):
			return annotationsError(raw)
		case w == "resource" && got == "object":
			return resourceError(raw)
		}
	}
	return "must be " + strings.ReplaceAll(want, "|", " or ")
}

// fieldsError checks the fields of the object raw: want maps a key to valueError's type, a
// trailing "!" when required.
func fieldsError(raw json.RawMessage, want map[string]string) string {
	o, err := parseObject(raw)
	if err != nil {
		return err.Error()
	}
	for k, w := range want {
		v, ok := o.get(k)
		if !ok {
			if strings.HasSuffix(w, "!") {
				return fmt.Sprintf("needs %q", k)
			}
			continue
		}
		if why := valueError(v, strings.TrimSuffix(w, "!")); why != "" {
			return fmt.Sprintf("%q %s", k, why)
		}
	}
	return ""
}

func annotationsError(raw json.RawMessage) string {
	if isNull(raw) {
		return ""
	}
	if why := fieldsError(raw, map[string]string{"audience": "array|null", "lastModified": "string|null",
		"priority": "number|null", metaKey: "object|null"}); why != "" {
		return "(annotations) " + why
	}
	var a struct{ Audience []json.RawMessage }
	json.Unmarshal(raw, &a)
	for _, r := range a.Audience {
		if s := string(r); s != `"user"` && s != `"assistant"` {
			return `(annotations) "audience" holds other than "user" and "assistant"`
		}
	}
	return ""
}

func resourceError(raw json.RawMessage) string {
	o, err := parseObject(raw)
	if err != nil {
		return err.Error()
	}
	want := map[string]string{"uri": "string!", "mimeType": "string|null", metaKey: "object|null", "text": "string!"}
	if !o.has("text") {
		delete(want, "text")
		want["blob"] = "string!"
	}
	if why := fieldsError(raw, want); why != "" {
		return "(resource) " + why
	}
	return ""
}
