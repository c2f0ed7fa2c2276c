package manifest

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// PlainRule is the rule for a plain name (docs/store.md, "Ids and names"), in the words of every
// message that refuses a name or a path for breaking it.
const PlainRule = "a plain name is valid UTF-8, 1 to 255 bytes, with no / or NUL, and not . or .."

// Quote shows a path or name exactly as it is, wherever a person or a model reads it, unless it
// could not stay one honest line: one with a line break, a control character, a bidi override or
// isolate (which reorder what a reader sees), or a byte that is not UTF-8, or one that starts
// with a double quote (so that a quoted form is never mistaken for a name), is shown in Go's
// double-quoted form. Only those characters (and " and \) are escaped in it: a name's NBSP,
// U+202F (every macOS screenshot's), ideographic space, ZWNJ, emoji and combining accents stay as
// they are, so that what is shown is what a tool must open.
func Quote(s string) string {
	if utf8.ValidString(s) && !strings.HasPrefix(s, `"`) && strings.IndexFunc(s, MustEscape) < 0 {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	b = append(b, '"')
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = fmt.Appendf(b, `\x%02x`, s[i])
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case MustEscape(r):
			q := strconv.QuoteRune(r)
			b = append(b, q[1:len(q)-1]...)
		default:
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return string(append(b, '"'))
}

// MustEscape reports whether r cannot be shown as itself in a line that names a path: a control
// character (C0, DEL, C1), a line or paragraph separator, or a bidi embedding, override or
// isolate (U+202A..U+202E, U+2066..U+2069).
func MustEscape(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' ||
		r >= '\u202a' && r <= '\u202e' || r >= '\u2066' && r <= '\u2069'
}
