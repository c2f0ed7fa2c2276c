package main

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// stores.go is the one file of the command that knows the backends (its comment says why): every
// other non-test file goes through openStore and the seam, so a file that imports a backend's
// package fails here.
func TestOnlyStoresImportsBackends(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	backends := []string{"github.com/attachctl/attachctl/ops/store/local", "github.com/attachctl/attachctl/ops/store/s3"}
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
				if p != b && !strings.HasPrefix(p, b+"/") {
					continue
				}
				if name != "stores.go" {
					t.Errorf("%s imports %s: only stores.go may know the backends", name, p)
				} else {
					seen++
				}
			}
		}
	}
	if seen != len(backends) {
		t.Errorf("stores.go imports %d of the %d backends: the check looks at the wrong names", seen, len(backends))
	}
}
