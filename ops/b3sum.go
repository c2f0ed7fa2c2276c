package ops

import (
	"fmt"
	"strings"

	"github.com/attachctl/attachctl/manifest"
)

// B3sumLine and B3sumEscape are b3sum's line format (manifest holds them: a folder's BLAKE3 is
// defined over such lines).
var (
	B3sumLine   = manifest.B3sumLine
	B3sumEscape = manifest.B3sumEscape
)

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
