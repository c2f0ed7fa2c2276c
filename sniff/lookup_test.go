package sniff

import (
	"testing"

	"github.com/gabriel-vasile/mimetype"
)

// lookup finds mimetype's node for s, parameters ignored: classify works on the node (its parent
// chain) and strips parameters from its string itself.
func lookup(t *testing.T, s string) *mimetype.MIME {
	t.Helper()
	m := mimetype.Lookup(baseMime(s))
	if m == nil {
		t.Fatalf("mimetype does not know %s", s)
	}
	return m
}

func TestBaseMime(t *testing.T) {
	for in, want := range map[string]string{
		"text/plain; charset=utf-8": "text/plain",
		"text/HTML;charset=utf-8":   "text/html",
		"application/json":          "application/json",
		" image/png ":               "image/png",
	} {
		if got := baseMime(in); got != want {
			t.Errorf("baseMime(%q) = %q, want %q", in, got, want)
		}
	}
}
