package doc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/scripts/docgen"
)

// The fuzz targets' seeds are added here and kept in testdata/fuzz/<target>/ (written by
// TestWriteFuzzSeeds with DOC_WRITE_FUZZ_SEEDS=1); both run in every plain `go test`.

// fuzzLimits are small, so that a mutated document meets them.
var fuzzLimits = Limits{MaxMemory: 64 << 20, Timeout: 5 * time.Second, MaxPages: 50, MaxPageInches: 50, MaxUnzipped: 1 << 20}

func ooxmlSeeds() map[string][]byte {
	return map[string][]byte{
		"docx": docgen.DOCXPages([]string{"a paragraph", "before"}, []string{"after"}),
		"xlsx": docgen.XLSXSheets([][]string{{"a", "1"}, {"b", "2"}}, [][]string{{"second"}}),
		"pptx": docgen.PPTX([]string{"title", "two"}),
		"odt":  docgen.ODT([]string{"one", "two"}),
		"bomb": docgen.ZipBombDOCX(2 << 20),
		"liar": docgen.LyingZipBombDOCX(2 << 20),
	}
}

func pdfSeeds(t testing.TB) map[string][]byte {
	text3 := read(t, "text3.pdf")
	return map[string][]byte{
		"text3":     text3,
		"scan2":     read(t, "scan2.pdf"),
		"encrypted": read(t, "encrypted.pdf"),
		"generated": docgen.TextPDF([]string{"generated", "two"}),
		"scan":      docgen.ScanPDF(1),
		"manypages": docgen.ManyPagesPDF(60),
		"hugepage":  docgen.HugePagePDF(200),
		"truncated": docgen.Truncated(text3),
		"noxref":    bytes.Replace(docgen.TextPDF([]string{"no xref"}), []byte("xref"), []byte("xxxx"), 1),
		"genlocked": docgen.EncryptedPDF(),
	}
}

// checkText is what every document must give, whatever its bytes: a one-line reason and no
// pages, or pages numbered in order within the limits.
func checkText(t *testing.T, pages []Page, info Info, lim Limits) {
	if info.Reason != "" {
		if pages != nil || strings.Contains(info.Reason, "\n") {
			t.Fatalf("reason %q with %d pages", info.Reason, len(pages))
		}
		return
	}
	if len(pages) > info.Pages || info.Pages > lim.MaxPages {
		t.Fatalf("%d pages of %d (limit %d)", len(pages), info.Pages, lim.MaxPages)
	}
	var n int64
	for i, p := range pages {
		if p.N != i+1 {
			t.Fatalf("page %d numbered %d", i+1, p.N)
		}
		n += int64(len(p.Text))
	}
	if n > lim.MaxUnzipped && n > textBudget(lim) {
		t.Fatalf("%d bytes of text", n)
	}
}

// FuzzOOXML feeds the office readers arbitrary zips: never a panic, always within the limits.
func FuzzOOXML(f *testing.F) {
	for _, b := range ooxmlSeeds() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, format := range []string{"docx", "xlsx", "pptx", "odt"} {
			pages, info := Text(context.Background(), bytes.NewReader(data), int64(len(data)), format, fuzzLimits)
			checkText(t, pages, info, fuzzLimits)
		}
	})
}

// FuzzPDF feeds pdfium mutated PDFs: never a panic, a reason or text within the limits, and a
// first page rendered at the size asked or not at all.
func FuzzPDF(f *testing.F) {
	for _, b := range pdfSeeds(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		pages, info := Text(context.Background(), r, int64(len(data)), "pdf", fuzzLimits)
		checkText(t, pages, info, fuzzLimits)
		if in := Inspect(context.Background(), r, int64(len(data)), "pdf", fuzzLimits); (in.Reason == "") != (info.Reason == "") && !strings.Contains(in.Reason+info.Reason, "took longer") {
			t.Fatalf("Inspect says %q, Text %q", in.Reason, info.Reason)
		}
		img, err := Render(context.Background(), r, int64(len(data)), 1, 64, fuzzLimits)
		if err == nil {
			if b := img.Bounds(); max(b.Dx(), b.Dy()) != 64 {
				t.Fatalf("rendered %v", b)
			}
		} else if img != nil || strings.Contains(err.Error(), "\n") {
			t.Fatalf("error %q with an image", err)
		}
	})
}

// TestWriteFuzzSeeds writes the seeds to testdata/fuzz, where `go test` runs them and `go test
// -fuzz` starts from them. Run with DOC_WRITE_FUZZ_SEEDS=1 after changing the generators.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("DOC_WRITE_FUZZ_SEEDS") == "" {
		t.Skip("DOC_WRITE_FUZZ_SEEDS not set: the seeds kept are used")
	}
	for target, seeds := range map[string]map[string][]byte{"FuzzOOXML": ooxmlSeeds(), "FuzzPDF": pdfSeeds(t)} {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range seeds {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
