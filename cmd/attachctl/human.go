package main

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// escapeLine keeps a line for people one line: names in it are shown with manifest.Quote where
// they are put in, and this guards the whole line against anything left (a message that names a
// path unquoted). A line with a control character, or a byte that is not UTF-8, is shown escaped
// as Go escapes it (`\n`, `\t`, `\x1b`, and then a backslash as `\\`), so that a file name with a
// newline cannot break a line apart or forge another, and a terminal escape is shown, not obeyed.
func escapeLine(s string) string {
	if utf8.ValidString(s) && strings.IndexFunc(s, unicode.IsControl) < 0 {
		return s
	}
	q := strconv.Quote(s)
	return strings.ReplaceAll(q[1:len(q)-1], `\"`, `"`)
}
