package ops

import (
	"fmt"
	"strings"
)

// B3sumLine is one line as b3sum writes it: a path holding a backslash or a newline is escaped
// (\\ and \n) and the line then starts with a backslash.
func B3sumLine(hash, path string) string {
	if strings.ContainsAny(path, "\\\n") {
		return "\\" + hash + "  " + B3sumEscape(path) + "\n"
	}
	return hash + "  " + path + "\n"
}

// B3sumEscape escapes a path as b3sum does: a backslash becomes two, a newline backslash-n.
func B3sumEscape(path string) string {
	return strings.NewReplacer("\\", "\\\\", "\n", "\\n").Replace(path)
}

// ParseB3sumLine reads one b3sum line: the hash and the path, unescaped.
func ParseB3sumLine(line string) (hash, path string, err error) {
	escaped := strings.HasPrefix(line, "\\")
	if escaped {
		line = line[1:]
	}
	hash, path, ok := strings.Cut(line, "  ")
	if !ok || len(hash) != 64 || strings.Trim(hash, "0123456789abcdef") != "" || path == "" {
		return "", "", fmt.Errorf("not a b3sum line (HASH  PATH)")
	}
	if escaped {
		var b strings.Builder
		for i := 0; i < len(path); i++ {
			if path[i] != '\\' {
				b.WriteByte(path[i])
				continue
			}
			if i+1 == len(path) || (path[i+1] != '\\' && path[i+1] != 'n') {
				return "", "", fmt.Errorf("bad escape in %q", path)
			}
			i++
			if path[i] == 'n' {
				b.WriteByte('\n')
			} else {
				b.WriteByte('\\')
			}
		}
		path = b.String()
	}
	return hash, path, nil
}
