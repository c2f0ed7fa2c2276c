package manifest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Code is one of the error codes of docs/errors.md. Every error that library code returns to a
// stage carries one, so that the record's "error" object and the message on standard error agree.
type Code string

// The error codes. A new code is added here and in docs/errors.md.
const (
	FileMissing        Code = "file.missing"
	FileUnreadable     Code = "file.unreadable"
	FileNotRegular     Code = "file.notRegular"
	FileChanged        Code = "file.changed"
	FileBadName        Code = "file.badName"
	ManifestInvalid    Code = "manifest.invalid"
	UploadInvalid      Code = "upload.invalid"
	UploadMissing      Code = "upload.missing"
	UploadUnreadable   Code = "upload.unreadable"
	UploadOffset       Code = "upload.offset"
	UploadPastSize     Code = "upload.pastSize"
	UploadSizeMismatch Code = "upload.sizeMismatch"
	UploadHashMismatch Code = "upload.hashMismatch"
	UploadSourceChange Code = "upload.sourceChanged"
	UploadDiskFull     Code = "upload.diskFull"
	UploadTooMany      Code = "upload.tooMany"
	UploadInterrupted  Code = "upload.interrupted"
	UploadTooLarge     Code = "upload.tooLarge" // over the store's largest file (its max-file)
	VerifyMismatch     Code = "verify.mismatch"
	StoreLocked        Code = "store.locked"
	StoreNotStore      Code = "store.notStore"
	StoreFull          Code = "store.full" // the store's max-bytes or max-files would be passed
	StoreUnreachable   Code = "store.unreachable"
)

// Error is the "error" object of a record: the stage that failed, the code, and a message that names
// the path or id and what went wrong. It is also the error value library code returns.
type Error struct {
	Stage   string `json:"stage"`
	Code    Code   `json:"code"`
	Message string `json:"message"`
	err     error  // the cause, for errors.Is/As; not serialised
}

// Error renders as "message (code)", the form written on standard error.
func (e *Error) Error() string { return e.Message + " (" + string(e.Code) + ")" }

// Unwrap returns the cause, if any.
func (e *Error) Unwrap() error { return e.err }

// Errorf makes an *Error with code and a formatted message. A %w verb keeps its cause for errors.Is.
func Errorf(code Code, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Code: code, Message: err.Error(), err: errors.Unwrap(err)}
}

// AsError returns err as an *Error. An error that carries no code becomes one with code def.
func AsError(err error, def Code) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: def, Message: err.Error(), err: err}
}

// CodeOf returns the code err carries, or "" when it carries none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

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
