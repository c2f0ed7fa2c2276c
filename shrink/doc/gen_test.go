package doc

import (
	"archive/zip"
	"bytes"
	"testing"
)

// The documents of the tests come from scripts/docgen, made at test time with no tool; zipOf
// here only makes the broken zips that are not documents at all.

type part struct{ name, body string }

func zipOf(t testing.TB, parts ...part) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, p := range parts {
		w, err := zw.Create(p.name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(p.body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
