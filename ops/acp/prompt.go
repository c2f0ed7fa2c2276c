// Package acp is attachctl's side of the Agent Client Protocol (docs/resolve.md): the prompt
// that names uploads by reference (Prompt), and resolve, which reads such a prompt as untrusted
// input and turns it into what an agent can use (Resolve). It checks the prompt's JSON (exact
// keys, ACP's content block shapes), plans what goes inline within the message's limits, and
// streams the resolved document. Of the store it needs only what Uploads declares: a guarded open
// of finished uploads and the .used marker, so that any store backend can serve it.
package acp

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// PromptOptions tune Prompt.
type PromptOptions struct {
	// Session is the ACP session id, the "sessionId" of the params.
	Session string
	// Text, when HasText is set, is the text block that comes first (it may be empty).
	Text    string
	HasText bool
	// JSONRPC wraps the params as a JSON-RPC 2.0 "session/prompt" request with id ID.
	JSONRPC bool
	// ID is the request's id as JSON (a number or a string); empty means 1.
	ID json.RawMessage
}

// Reference metadata of a block that names an upload: _meta.acpmux.upload.
const (
	metaKey     = "_meta"
	acpmuxKey   = "acpmux"
	uploadKey   = "upload"
	contextKey  = "context"
	uploadIDKey = "uploadId"
	fileNameKey = "fileName"
	// RefScheme is the uri scheme of a resource_link that names an upload: acpmux-upload:<id>.
	RefScheme = "acpmux-upload:"
)

// inlineImageTypes are the image types a model takes inline (docs/resolve.md).
var inlineImageTypes = map[string]bool{
	"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true,
}

// baseMime is a media type without its parameters, lowercased.
func baseMime(m string) string {
	if i := strings.IndexByte(m, ';'); i >= 0 {
		m = m[:i]
	}
	return strings.ToLower(strings.TrimSpace(m))
}

// UploadName is the name a record's upload is finished under: the base of upload.path, else the
// record's name.
func UploadName(rec *manifest.Record) string {
	if rec.Upload != nil && rec.Upload.Path != "" {
		return filepath.Base(rec.Upload.Path)
	}
	return rec.Name
}

// ReferenceBlock is the ACP content block that names rec's upload by reference: an "image" block
// for PNG, JPEG, GIF and WebP, a "resource_link" with uri acpmux-upload:<id> for every other file.
// A record that carries an error is refused with that error's code; one with no upload is
// upload.missing; an id or name that is not plain is upload.invalid.
func ReferenceBlock(rec *manifest.Record) (json.RawMessage, error) {
	if rec.Failed() {
		// prompt's own refusal (its message names the stage the record failed in), with the
		// record's code.
		return nil, &fault.Error{Code: rec.Error.Code,
			Message: fmt.Sprintf("%s: carries an error from %s: %s", rec.Path, rec.Error.Stage, rec.Error.Message)}
	}
	if rec.Upload == nil || rec.Upload.ID == "" {
		return nil, fault.Errorf(fault.UploadMissing, "%s: not uploaded (the record has no upload)", rec.Path)
	}
	id, name := rec.Upload.ID, UploadName(rec)
	if err := store.ValidID(id); err != nil {
		return nil, fault.Errorf(fault.UploadInvalid, "%s: %s", rec.Path, err.(*fault.Error).Message)
	}
	if err := store.ValidName(name); err != nil {
		return nil, fault.Errorf(fault.UploadInvalid, "%s: %s", rec.Path, err.(*fault.Error).Message)
	}
	rel := rec.Rel
	if rel == name {
		rel = "" // a file at the top of the folder: its name says it all
	}
	if rel != "" {
		if why := relError(rel); why != "" {
			return nil, fault.Errorf(fault.UploadInvalid, "%s: rel %q %s", rec.Path, rel, why)
		}
	}
	type ref struct {
		UploadID string `json:"uploadId"`
		FileName string `json:"fileName"`
		Rel      string `json:"rel,omitempty"` // a file of a folder walked with --each: resolve names it so
	}
	meta := map[string]any{acpmuxKey: map[string]any{uploadKey: ref{id, name, rel}}}
	var block any
	if mt := baseMime(rec.Mime); inlineImageTypes[mt] {
		block = struct {
			Type     string `json:"type"`
			MimeType string `json:"mimeType"`
			Meta     any    `json:"_meta"`
		}{"image", mt, meta}
	} else {
		var folder string // a folder says so; a file's type is resolve's to sniff
		if rec.Kind == manifest.KindFolder {
			folder = manifest.MimeFolder
		}
		block = struct {
			Type     string `json:"type"`
			URI      string `json:"uri"`
			Name     string `json:"name"`
			MimeType string `json:"mimeType,omitempty"`
			Meta     any    `json:"_meta"`
		}{"resource_link", RefScheme + id, name, folder, meta}
	}
	return marshal(block)
}

// Prompt writes the ACP session/prompt params for recs, in order, after the text block:
// {"sessionId": S, "prompt": [...]}, or with opts.JSONRPC the JSON-RPC request carrying them. The
// document is compact JSON followed by a newline. When any record is refused Prompt returns no
// document and an error that joins every refusal (each a *fault.Error), in record order.
func Prompt(recs []*manifest.Record, opts PromptOptions) ([]byte, error) {
	blocks := make([]json.RawMessage, 0, len(recs)+1)
	if opts.HasText {
		b, err := marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{"text", opts.Text})
		if err != nil {
			return nil, err
		}
		blocks = append(blocks, b)
	}
	var errs []error
	for _, rec := range recs {
		b, err := ReferenceBlock(rec)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		blocks = append(blocks, b)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	params, err := marshal(struct {
		SessionID string            `json:"sessionId"`
		Prompt    []json.RawMessage `json:"prompt"`
	}{opts.Session, blocks})
	if err != nil {
		return nil, err
	}
	if opts.JSONRPC {
		if params, err = wrapRequest(opts.ID, params); err != nil {
			return nil, err
		}
	}
	return append(params, '\n'), nil
}

// wrapRequest makes the JSON-RPC 2.0 session/prompt request with id around params.
func wrapRequest(id, params json.RawMessage) ([]byte, error) {
	if len(id) == 0 {
		id = json.RawMessage("1")
	}
	return marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}{"2.0", id, "session/prompt", params})
}

// RequestID turns a --id flag into a JSON-RPC id: a whole number stays a number, anything else
// becomes a string.
func RequestID(s string) json.RawMessage {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return json.RawMessage(strconv.FormatInt(n, 10))
	}
	b, _ := json.Marshal(s)
	return b
}
