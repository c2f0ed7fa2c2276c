package main

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// storeInternalDir is a folder store's internal folder as docs/store.md lays it out: the tests
// that look inside a store (its partials, its trash) look at the layout the docs promise, which
// the store's own package keeps internal.
const storeInternalDir = ".attachctl"

// stores.go is the one file of the command that opens stores (its comment says why): every other
// non-test file goes through openStore and the seam, so a file that imports ops/store/open, or
// any file that imports a backend's package, fails here.
func TestOnlyStoresImportsBackends(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	const opener = "github.com/attachctl/attachctl/ops/store/open"
	backends := []string{"github.com/attachctl/attachctl/ops/store/internal/local", "github.com/attachctl/attachctl/ops/store/internal/s3"}
	seen := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for _, b := range backends {
				if p == b || strings.HasPrefix(p, b+"/") {
					t.Errorf("%s imports %s: the command opens stores through %s only", name, p, opener)
				}
			}
			if p != opener {
				continue
			}
			if name != "stores.go" {
				t.Errorf("%s imports %s: only stores.go opens stores", name, p)
			} else {
				seen++
			}
		}
	}
	if seen != 1 {
		t.Errorf("stores.go does not import %s: the check looks at the wrong name", opener)
	}
}
