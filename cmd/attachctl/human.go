package main

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// escapeLine makes s safe to print as (part of) one line for a person: a newline, a carriage
// return, a tab, any other control character and any byte that is not UTF-8 are shown escaped
// (`\n`, `\r`, `\t`, `\x1b`), so that a file name with a newline in it cannot break a line apart or
// forge another, and a terminal escape in a name is shown, not obeyed. A backslash is doubled only
// when the line has something escaped, so that ordinary names read as they are.
func escapeLine(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\\':
			b.WriteString(`\\`)
		case unicode.IsControl(r):
			if r < 0x100 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
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
