package manifest

import (
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends the record as one JSON object (no newline) to b and returns the extended
// slice: the known fields in the order of docs/manifest.md, then the unknown ones in input order.
// It writes what encoding/json writes for the record, byte for byte (strings escaped the same way,
// HTML characters included), without reflection or allocation beyond growing b: the writer of
// every stage runs it once per record.
func (r *Record) AppendJSON(b []byte) []byte {
	b = append(b, `{"path":`...)
	b = appendString(b, r.Path)
	b = appendOptString(b, `,"name":`, r.Name)
	if r.HasSize || r.Size != 0 {
		b = append(b, `,"size":`...)
		b = strconv.AppendInt(b, r.Size, 10)
	}
	b = appendOptString(b, `,"mime":`, r.Mime)
	b = appendOptString(b, `,"kind":`, r.Kind)
	if r.Kind == KindFolder || r.Files != 0 { // an empty folder says it holds 0 files
		b = append(b, `,"files":`...)
		b = strconv.AppendInt(b, int64(r.Files), 10)
	}
	b = appendOptString(b, `,"rel":`, r.Rel)
	b = appendOptString(b, `,"blake3":`, r.Blake3)
	b = appendOptInt(b, `,"width":`, r.Width)
	b = appendOptInt(b, `,"height":`, r.Height)
	b = appendOptInt(b, `,"orientation":`, r.Orientation)
	b = appendOptInt(b, `,"pages":`, r.Pages)
	if r.TextLayer != nil {
		b = append(b, `,"textLayer":`...)
		b = strconv.AppendBool(b, *r.TextLayer)
	}
	b = appendOptString(b, `,"docNote":`, r.DocNote)
	if s := r.Shrink; s != nil {
		b = append(b, `,"shrink":{"action":`...)
		b = appendString(b, s.Action)
		b = appendOptString(b, `,"reason":`, s.Reason)
		if f := s.From; f != nil {
			b = append(b, `,"from":{"path":`...)
			b = appendString(b, f.Path)
			b = append(b, `,"name":`...)
			b = appendString(b, f.Name)
			b = append(b, `,"size":`...)
			b = strconv.AppendInt(b, f.Size, 10)
			b = append(b, `,"mime":`...)
			b = appendString(b, f.Mime)
			b = appendOptString(b, `,"blake3":`, f.Blake3)
			b = appendOptInt(b, `,"width":`, f.Width)
			b = appendOptInt(b, `,"height":`, f.Height)
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	if u := r.Upload; u != nil {
		b = append(b, `,"upload":{"id":`...)
		b = appendString(b, u.ID)
		b = append(b, `,"store":`...)
		b = appendString(b, u.Store)
		b = append(b, `,"path":`...)
		b = appendString(b, u.Path)
		b = append(b, '}')
	}
	if v := r.Verified; v != nil {
		b = append(b, `,"verified":{"ok":`...)
		b = strconv.AppendBool(b, v.OK)
		b = append(b, `,"blake3":`...)
		b = appendString(b, v.Blake3)
		b = append(b, `,"at":`...)
		b = appendString(b, v.At)
		b = append(b, '}')
	}
	if e := r.Error; e != nil {
		b = append(b, `,"error":{"stage":`...)
		b = appendString(b, e.Stage)
		b = append(b, `,"code":`...)
		b = appendString(b, string(e.Code))
		b = append(b, `,"message":`...)
		b = appendString(b, e.Message)
		b = append(b, '}')
	}
	for _, f := range r.Extra {
		if knownKeys[f.Key] {
			continue
		}
		b = append(b, ',')
		b = appendString(b, f.Key)
		b = append(b, ':')
		b = append(b, f.Value...)
	}
	return append(b, '}')
}

func appendOptString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendString(append(b, key...), s)
}

func appendOptInt(b []byte, key string, n int) []byte {
	if n == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), int64(n), 10)
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string the way encoding/json writes it (AppendEscaped with
// HTML escaping), quotes included.
func appendString(b []byte, s string) []byte {
	return append(AppendEscaped(append(b, '"'), s, true), '"')
}

// safe and htmlSafe say which ASCII bytes a JSON string holds as they are: not the quote, the backslash or a
// control character, and for htmlSafe not < > & either (encoding/json's two sets).
var safe, htmlSafe = func() (s, h [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		s[c] = c != '"' && c != '\\'
		h[c] = s[c] && c != '<' && c != '>' && c != '&'
	}
	return
}()

// AppendEscaped appends the inside of the JSON string of s (no quotes) as encoding/json writes
// it: the quote and the backslash escaped with a backslash, \b \f \n \r \t by their short escapes, other control
// characters as \u00XX, each byte that is not UTF-8 as \ufffd, U+2028 and U+2029 as \u2028 and
// \u2029, and with html the characters < > & as \u00XX (json.Marshal; without html,
// json.Encoder with SetEscapeHTML(false)). Escaping is by character, so pieces of a string
// escaped one after another make the string escaped whole when each piece ends at a character's
// end. The manifest and resolve's output are written with it, so both escape one way.
func AppendEscaped(b []byte, s string, html bool) []byte {
	set := &safe
	if html {
		set = &htmlSafe
	}
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if set[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(b, s[start:]...)
}
