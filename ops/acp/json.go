package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/attachctl/attachctl/manifest"
)

// knownKeys are the keys ACP (v1) and acpmux give a meaning to in the objects a prompt, its
// JSON-RPC envelope and an initialize response are made of. Go's encoding/json, and decoders like
// it, match keys without regard to case (Unicode simple folding), the last one winning: a key that equals one of these in
// another case ("URI", "Type", "_Meta") would mean one thing to resolve and another to the agent,
// so it is refused wherever it appears.
var knownKeys = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{
		// JSON-RPC 2.0
		"jsonrpc", "id", "method", "params", "result", "error", "code", "message",
		// session/prompt params and content blocks
		"sessionId", "prompt", "type", "text", "data", "mimeType", "uri", "name", "title",
		"description", "size", "annotations", "audience", "priority", "lastModified", "resource",
		"blob", metaKey,
		// acpmux's _meta
		acpmuxKey, uploadKey, uploadIDKey, fileNameKey, contextKey, relKey,
		// initialize
		"protocolVersion", "agentCapabilities", "promptCapabilities", "image", "audio", "embeddedContext",
		"agentInfo", "version",
	} {
		m[foldKey(k)] = k
	}
	return m
}()

// foldKey is k folded as encoding/json folds a key when it matches one to a struct field: ASCII
// letters to upper case, every other rune to the smallest rune of its Unicode simple folding
// orbit. So "ſize" (U+017F, long s) folds as "size" does, and the Kelvin sign (U+212A) as "k":
// keys that encoding/json would take for known ones are recognised as such.
func foldKey(k string) string {
	var b strings.Builder
	b.Grow(len(k))
	for _, r := range k {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
			b.WriteByte(byte(r))
			continue
		}
		for {
			f := unicode.SimpleFold(r)
			if f <= r {
				r = f
				break
			}
			r = f
		}
		b.WriteRune(r)
	}
	return b.String()
}

// keyError is a key refused by the exact-key rule or seen twice in one object; at is where, as a
// dotted path from the object parsed ("" for its own keys).
type keyError struct {
	at, key, known string // known is set for a case variant
}

func (e *keyError) Error() string {
	where := ""
	if e.at != "" {
		where = " in " + e.at
	}
	if e.known != "" {
		return fmt.Sprintf("key %q%s is %q in another case: keys are matched exactly", e.key, where, e.known)
	}
	return fmt.Sprintf("key %q appears twice%s", e.key, where)
}

// checkKey refuses a key seen before in its object, or a case variant of a known key.
func checkKey(k string, seen map[string]bool, at string) error {
	if seen[k] {
		return &keyError{at: at, key: k}
	}
	seen[k] = true
	if known, ok := knownKeys[foldKey(k)]; ok && known != k {
		return &keyError{at: at, key: k, known: known}
	}
	return nil
}

// isKeyError tells a refused key from JSON that is not a prompt at all.
func isKeyError(err error) bool {
	var ke *keyError
	return errors.As(err, &ke)
}

// object is a JSON object with its fields in order and their values raw, so that what resolve
// does not model passes through byte for byte.
type object []field

type field struct {
	key string
	val json.RawMessage
}

// parseObject reads one JSON object, checking every key in it at any depth (checkKey): untrusted
// input could otherwise mean one thing here and another to the agent. The values come compacted.
// The values of the fields named in later are not looked into: the caller parses them itself, so
// that a refusal can name the prompt block it is in.
func parseObject(raw []byte, later ...string) (object, error) {
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
		if err := checkKey(key, seen, ""); err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, describeJSON(err)
		}
		if (v[0] == '{' || v[0] == '[') && !slices.Contains(later, key) {
			if err := walkKeys(v, key); err != nil {
				return nil, err
			}
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

// walkKeys checks the keys of every object inside the JSON value raw (valid JSON), which is at at.
func walkKeys(raw []byte, at string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	return walkValue(dec, at)
}

func walkValue(dec *json.Decoder, at string) error {
	t, err := dec.Token()
	if err != nil {
		return describeJSON(err)
	}
	d, ok := t.(json.Delim)
	if !ok {
		return nil
	}
	if d == '{' {
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return describeJSON(err)
			}
			k := kt.(string)
			if err := checkKey(k, seen, at); err != nil {
				return err
			}
			if err := walkValue(dec, at+"."+k); err != nil {
				return err
			}
		}
	} else {
		for i := 0; dec.More(); i++ {
			if err := walkValue(dec, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
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

// without is o less field k (a copy when k is there).
func (o object) without(k string) object {
	for i := range o {
		if o[i].key == k {
			return append(append(object(nil), o[:i]...), o[i+1:]...)
		}
	}
	return o
}

// marshal is the object as compact JSON.
func (o object) marshal() []byte {
	n := 2
	for _, f := range o {
		n += len(f.key) + len(f.val) + 4 // quotes, colon, comma
	}
	b := make([]byte, 1, n)
	b[0] = '{'
	for i, f := range o {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, f.key)
		b = append(b, ':')
		b = append(b, f.val...)
	}
	return append(b, '}')
}

func jsonString(s string) json.RawMessage {
	return appendJSONString(make([]byte, 0, len(s)+2), s)
}

// appendJSONString appends s as a JSON string, escaped exactly as marshal (encoding/json
// without HTML escaping) escapes it, without its reflection and copies.
func appendJSONString(dst []byte, s string) []byte {
	return append(appendJSONEscaped(append(dst, '"'), s), '"')
}

// appendJSONEscaped appends the inside of s as a JSON string (appendJSONString without the
// quotes), as the manifest escapes it but without HTML escaping (resolve's output is read by
// agents, not browsers). A document's text is written in pieces: the page heads around its pages
// start and end with a newline, so each piece ends at a character's end.
func appendJSONEscaped(dst []byte, s string) []byte { return manifest.AppendEscaped(dst, s, false) }

// jsonEscapedLen is len(appendJSONEscaped(nil, s)), counted without writing.
func jsonEscapedLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			switch {
			case c >= 0x20 && c != '"' && c != '\\':
			case c == '\\', c == '"', c == '\b', c == '\f', c == '\n', c == '\r', c == '\t':
				n++
			default:
				n += 5
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			n += 6 - size
		}
		i += size
	}
	return n
}

// marshal is json.Marshal without HTML escaping, so that <, > and & stay as they are.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// jsonKind names the JSON type of a (compact, valid) raw value by its first byte.
func jsonKind(raw json.RawMessage) string {
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 'n':
		return "null"
	case 't', 'f':
		return "boolean"
	}
	return "number"
}
