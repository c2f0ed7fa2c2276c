package local

import (
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// Every name that breaks the rule of plain names (docs/store.md) is refused with upload.invalid in
// words that state the rule, the same words sniff uses for a path that is not UTF-8.
func TestValidNameStatesTheRule(t *testing.T) {
	for _, tt := range []struct{ name, says string }{
		{"", "name is empty"},
		{strings.Repeat("x", 256), "longer than 255 bytes"},
		{"caf\xe9.txt", `name "caf\xe9.txt": not valid UTF-8`},
		{"a/b", "contains a slash or NUL"},
		{"a\x00b", "contains a slash or NUL"},
		{".", "not a plain name"},
		{"..", "not a plain name"},
	} {
		err := store.ValidName(tt.name)
		if fault.CodeOf(err) != fault.UploadInvalid || !strings.Contains(err.Error(), tt.says) ||
			!strings.Contains(err.Error(), manifest.PlainRule) {
			t.Errorf("%q: got %v, want upload.invalid saying %q and the rule", tt.name, err, tt.says)
		}
	}
	for _, ok := range []string{"a.png", "café 日本.txt", strings.Repeat("x", 255), "..."} {
		if err := store.ValidName(ok); err != nil {
			t.Errorf("%q: refused: %v", ok, err)
		}
	}
}
