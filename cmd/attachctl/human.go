package main

import (
	"fmt"
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

// humanBytes is a size for a person, in SI units as `du --si` and `ls -lh --si` give them:
// 999 B, 1.0 kB, 1.9 MB, 12 GB. Exact byte counts go in the JSON.
func humanBytes(n int64) string {
	if n < 1000 {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n)
	for _, unit := range []string{"kB", "MB", "GB", "TB", "PB"} {
		v /= 1000
		if v < 999.5 || unit == "PB" {
			if v < 9.95 {
				return fmt.Sprintf("%.1f %s", v, unit)
			}
			return fmt.Sprintf("%.0f %s", v, unit)
		}
	}
	return fmt.Sprintf("%d B", n)
}
