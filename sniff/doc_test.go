package sniff

import (
	"archive/zip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/shrink/doc"
)

func docx(t *testing.T, path, body string) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	// The parts mimetype looks for first, so that the zip is sniffed as a .docx.
	w, _ := zw.Create("[Content_Types].xml")
	w.Write([]byte(`<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`))
	w, _ = zw.Create("word/document.xml")
	w.Write([]byte(`<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` + body + `</w:body></w:document>`))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestMain keeps pdfium's compiled code in the system's temporary folder, not the user's cache
// (as shrink/doc's tests do, sharing it).
func TestMain(m *testing.M) {
	doc.SetCodeCache(filepath.Join(os.TempDir(), "attachctl-test-wasm"))
	os.Exit(m.Run())
}

// TestFillDocuments: a document gets its pages and text-layer fact, or the reason it cannot be
// read; it stays a document and Fill does not fail. Other files get none of the three.
func TestFillDocuments(t *testing.T) {
	dir := t.TempDir()
	docx(t, filepath.Join(dir, "two.docx"), `<w:p><w:r><w:t>one</w:t><w:br w:type="page"/><w:t>two</w:t></w:r></w:p>`)
	truncated, err := os.ReadFile("../shrink/doc/testdata/text3.pdf")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "cut.pdf"), truncated[:100], 0o644)
	yes, no := true, false
	for _, c := range []struct {
		path   string
		noHash bool
		pages  int
		text   *bool
		note   string
	}{
		{filepath.Join(samples, "document.pdf"), false, 1, &yes, ""},
		{"../shrink/doc/testdata/text3.pdf", false, 3, &yes, ""},
		{"../shrink/doc/testdata/scan2.pdf", false, 2, &no, ""},
		{"../shrink/doc/testdata/encrypted.pdf", false, 0, nil, "encrypted: it needs a password"},
		{filepath.Join(dir, "cut.pdf"), false, 0, nil, "damaged: not a PDF pdfium can read"},
		{filepath.Join(dir, "two.docx"), false, 2, &yes, ""},
		// Headers only: no document is opened.
		{"../shrink/doc/testdata/text3.pdf", true, 0, nil, ""},
		{filepath.Join(samples, "image.png"), false, 0, nil, ""},
		{filepath.Join(samples, "archive.zip"), false, 0, nil, ""},
		// Without Pages: nothing, and what a record had is cleared.
		{"nopages:../shrink/doc/testdata/text3.pdf", false, 0, nil, ""},
	} {
		path, pages := strings.CutPrefix(c.path, "nopages:")
		rec := manifest.Record{Path: path, Pages: 9, DocNote: "stale"}
		if err := Fill(&rec, Options{NoHash: c.noHash, Pages: !pages}); err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		if rec.Pages != c.pages || (rec.TextLayer == nil) != (c.text == nil) ||
			rec.TextLayer != nil && *rec.TextLayer != *c.text || rec.DocNote != c.note {
			t.Errorf("%s (no hash %v): pages %d, text layer %v, note %q; want %d, %v, %q",
				c.path, c.noHash, rec.Pages, rec.TextLayer, rec.DocNote, c.pages, c.text, c.note)
		}
		if c.note != "" && rec.Kind != manifest.KindDocument {
			t.Errorf("%s: kind %q, want a document", c.path, rec.Kind)
		}
	}
}
