// Package manifest is attachctl's one data format: JSON Lines, one record per attachment. It holds
// the record type, and a streaming reader and writer that keep every field they do not know.
package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"unicode/utf16"

	"github.com/attachctl/attachctl/manifest/fault"
)

// Kinds of docs/manifest.md.
const (
	KindImage    = "image"
	KindAudio    = "audio"
	KindVideo    = "video"
	KindDocument = "document"
	KindText     = "text"
	KindArchive  = "archive"
	KindBinary   = "binary"
	KindFolder   = "folder"
)

// MimeFolder is a folder record's media type.
const MimeFolder = "inode/directory"

// Shrink is the "shrink" object: what shrink did and what the record stood for before.
type Shrink struct {
	Action string `json:"action"`
	Reason string `json:"reason,omitempty"`
	From   *From  `json:"from,omitempty"`
}

// From is the original of a shrunk image.
type From struct {
	Path   string `json:"path"`
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	Mime   string `json:"mime"`
	Blake3 string `json:"blake3,omitempty"`
	Width  int    `json:"width,omitempty"`
	Height int    `json:"height,omitempty"`
}

// Upload is the "upload" object: the upload's id, the store's absolute path and the finished file's.
type Upload struct {
	ID    string `json:"id"`
	Store string `json:"store"`
	Path  string `json:"path"`
}

// Verified is the "verified" object.
type Verified struct {
	OK     bool   `json:"ok"`
	Blake3 string `json:"blake3"`
	At     string `json:"at"`
}

// Record is one line of a manifest. Known fields are typed; every other field is kept in Extra,
// raw and in its original order, and written back after the known ones.
type Record struct {
	Path        string       `json:"path"`
	Name        string       `json:"name,omitempty"`
	Size        int64        `json:"size"`
	Mime        string       `json:"mime,omitempty"`
	Kind        string       `json:"kind,omitempty"`
	Files       int          `json:"files,omitempty"` // a folder: how many files it holds
	Rel         string       `json:"rel,omitempty"`   // a file of a folder walked with --each: its path in the folder
	Blake3      string       `json:"blake3,omitempty"`
	Width       int          `json:"width,omitempty"`
	Height      int          `json:"height,omitempty"`
	Orientation int          `json:"orientation,omitempty"`
	Pages       int          `json:"pages,omitempty"`     // a document: its pages (PDF), slides or sheets
	TextLayer   *bool        `json:"textLayer,omitempty"` // a document read: whether it has text to extract
	DocNote     string       `json:"docNote,omitempty"`   // a document that cannot be read: why, in one line
	Shrink      *Shrink      `json:"shrink,omitempty"`
	Upload      *Upload      `json:"upload,omitempty"`
	Verified    *Verified    `json:"verified,omitempty"`
	Error       *fault.Error `json:"error,omitempty"`

	// HasSize says the size is known: set by the reader when the line had "size", and by stages
	// that set Size. A zero size is written only when it is known (an empty file has size 0).
	HasSize bool `json:"-"`
	// Extra holds the fields this version does not know, in input order, byte for byte.
	Extra []Field `json:"-"`
	// Sniffed, when set, is what the sniff of this process read that the stage after it would
	// otherwise read again: a folder's listing (its files, as sniff lists them) or the bytes of a
	// small file read whole. Never read or written as JSON.
	Sniffed any `json:"-"`
}

// Field is one unknown field of a record.
type Field struct {
	Key   string
	Value json.RawMessage
}

// knownKeys are the fields Record types; every other key goes to Extra.
var knownKeys = map[string]bool{
	"path": true, "name": true, "size": true, "mime": true, "kind": true, "files": true, "rel": true, "blake3": true,
	"width": true, "height": true, "orientation": true, "pages": true, "textLayer": true, "docNote": true,
	"shrink": true, "upload": true,
	"verified": true, "error": true,
}

// Failed reports whether the record carries an error; later stages pass such records on untouched.
func (r *Record) Failed() bool { return r.Error != nil }

// Fail sets the record's error from err for stage, giving code def to an error that carries none,
// and returns the *fault.Error it set.
func (r *Record) Fail(stage string, err error, def fault.Code) *fault.Error {
	e := fault.AsError(err, def)
	c := *e
	c.Stage = stage
	r.Error = &c
	return r.Error
}

// SetSize sets Size and marks it known.
func (r *Record) SetSize(n int64) { r.Size, r.HasSize = n, true }

// recordJSON is Record's known fields without its methods, for the standard encoder.
type recordJSON struct {
	Path        *string      `json:"path"`
	Name        string       `json:"name,omitempty"`
	Size        *int64       `json:"size,omitempty"`
	Mime        string       `json:"mime,omitempty"`
	Kind        string       `json:"kind,omitempty"`
	Files       *int         `json:"files,omitempty"`
	Rel         string       `json:"rel,omitempty"`
	Blake3      string       `json:"blake3,omitempty"`
	Width       int          `json:"width,omitempty"`
	Height      int          `json:"height,omitempty"`
	Orientation int          `json:"orientation,omitempty"`
	Pages       int          `json:"pages,omitempty"`     // a document: its pages (PDF), slides or sheets
	TextLayer   *bool        `json:"textLayer,omitempty"` // a document read: whether it has text to extract
	DocNote     string       `json:"docNote,omitempty"`   // a document that cannot be read: why, in one line
	Shrink      *Shrink      `json:"shrink,omitempty"`
	Upload      *Upload      `json:"upload,omitempty"`
	Verified    *Verified    `json:"verified,omitempty"`
	Error       *fault.Error `json:"error,omitempty"`
}

// UnmarshalJSON reads one record: known fields typed (a wrong type is an error), the rest kept raw.
// It requires a JSON object with a string "path".
func (r *Record) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("a record must be a JSON object")
	}
	*r = Record{}
	var known recordJSON
	seen := map[string]int{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return err
		}
		key := kt.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		if knownKeys[key] {
			if err := unmarshalKnown(&known, key, raw); err != nil {
				return err
			}
			continue
		}
		if i, dup := seen[key]; dup { // the last of duplicate keys wins, as in encoding/json
			r.Extra[i].Value = raw
			continue
		}
		seen[key] = len(r.Extra)
		r.Extra = append(r.Extra, Field{Key: key, Value: raw})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("more than one JSON value on the line")
	}
	if known.Path == nil {
		return fmt.Errorf(`missing "path"`)
	}
	r.Path = *known.Path
	r.Name, r.Mime, r.Kind, r.Blake3 = known.Name, known.Mime, known.Kind, known.Blake3
	if known.Files != nil {
		r.Files = *known.Files
	}
	r.Rel = known.Rel
	if known.Size != nil {
		r.SetSize(*known.Size)
	}
	r.Width, r.Height, r.Orientation = known.Width, known.Height, known.Orientation
	r.Pages, r.TextLayer, r.DocNote = known.Pages, known.TextLayer, known.DocNote
	r.Shrink, r.Upload, r.Verified, r.Error = known.Shrink, known.Upload, known.Verified, known.Error
	return nil
}

// unmarshalKnown decodes one known field into its typed place, naming the field on a type error.
func unmarshalKnown(known *recordJSON, key string, raw json.RawMessage) error {
	if esc := loneSurrogate(raw); esc != "" {
		return fmt.Errorf("field %q: %s is half of a UTF-16 surrogate pair, not a character", key, esc)
	}
	var one []byte
	one = append(one, '{')
	kb, _ := json.Marshal(key)
	one = append(one, kb...)
	one = append(one, ':')
	one = append(one, raw...)
	one = append(one, '}')
	if err := json.Unmarshal(one, known); err != nil {
		var te *json.UnmarshalTypeError
		if ok := asTypeError(err, &te); ok {
			return fmt.Errorf("field %q: %s is not a %s", key, te.Value, te.Type)
		}
		return fmt.Errorf("field %q: %v", key, err)
	}
	if key == "path" && known.Path == nil {
		return fmt.Errorf(`field "path": null is not a string`)
	}
	return nil
}

// loneSurrogate returns the first \uXXXX escape in the JSON value raw that is half of a surrogate
// pair without its other half, or "". The decoder would take it as U+FFFD, and a path written that
// way (as Python writes a file name that is not UTF-8) would be read as another path.
func loneSurrogate(raw []byte) string {
	hex := func(i int) rune {
		if i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
			return -1
		}
		n, err := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16)
		if err != nil {
			return -1
		}
		return rune(n)
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		r := hex(i)
		if !utf16.IsSurrogate(r) {
			i++ // the escaped character, which may be a backslash
			continue
		}
		if lo := hex(i + 6); r < 0xdc00 && lo >= 0xdc00 && lo <= 0xdfff {
			i += 11 // the pair
			continue
		}
		return string(raw[i : i+6])
	}
	return ""
}

func asTypeError(err error, te **json.UnmarshalTypeError) bool {
	t, ok := err.(*json.UnmarshalTypeError)
	if ok {
		*te = t
	}
	return ok
}

// MarshalJSON writes the known fields in the order of docs/manifest.md, then the unknown ones in
// input order (AppendJSON).
func (r *Record) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }
