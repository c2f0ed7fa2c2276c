package doc

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/scripts/docgen"
	"github.com/attachctl/attachctl/shrink/internal/wasmcache"
)

// TestMain keeps pdfium's compiled code in the system's temporary folder, not the user's cache,
// and keeps it between runs: compiling the 5.8 MB module takes seconds, minutes under -race. The
// cache is keyed by the module and wazero's version, so a stale one is never used.
func TestMain(m *testing.M) {
	wasmcache.SetDir(filepath.Join(os.TempDir(), "attachctl-test-wasm"))
	os.Exit(m.Run())
}

func read(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFormatOf(t *testing.T) {
	for mime, want := range map[string]string{
		"application/pdf":            "pdf",
		"Application/PDF; version=2": "pdf",
		"application/vnd.openxmlformats-officedocument.wordprocessingml.document":   "docx",
		"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet":         "xlsx",
		"application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
		"application/vnd.oasis.opendocument.text":                                   "odt",
		"application/zip": "",
		"image/png":       "",
		"":                "",
	} {
		if got := FormatOf(mime); got != want {
			t.Errorf("FormatOf(%q) = %q, want %q", mime, got, want)
		}
	}
}

// TestText reads each kind of document and finds its known sentences on the right pages.
func TestText(t *testing.T) {
	for _, c := range []struct {
		name, format string
		data         []byte
		pages        []string // a sentence expected on each page, in order ("" = blank page)
		textLayer    bool
	}{
		{"text PDF", "pdf", read(t, "text3.pdf"), []string{
			"the heron waits by the cold river", "the lantern burns until dawn", "the orchard keeps its secrets"}, true},
		{"scanned PDF", "pdf", read(t, "scan2.pdf"), []string{"", ""}, false},
		{"generated PDF", "pdf", docgen.TextPDF([]string{"A small generated page.", "And (a second) one."}), []string{"A small generated page.", "And (a second) one."}, true},
		{"generated scan", "pdf", docgen.ScanPDF(2), []string{"", ""}, false},
		// 30 MB of content stream: read within the default limit, not within 32 MiB (TestHostile).
		{"long content stream", "pdf", docgen.BigStreamPDF(30 << 20), []string{"After a long stream."}, true},
		{"docx", "docx", docgen.DOCXPages([]string{"The first paragraph names the blue whale.", "Then a break"}, []string{"and the second page mentions the lighthouse."}),
			[]string{"The first paragraph names the blue whale.\nThen a break", "and the second page mentions the lighthouse."}, true},
		{"xlsx", "xlsx", docgen.XLSXSheets([][]string{{"Name", "Count"}, {"apples in the cellar", "42"}}, [][]string{{"the second sheet holds the ledger"}}),
			[]string{"Name\tCount\napples in the cellar\t42", "the second sheet holds the ledger"}, true},
		{"pptx", "pptx", docgen.PPTX([]string{"Slide one: growth & margins", "Slide two: the mountain pass"}),
			[]string{"Slide one: growth & margins", "Slide two: the mountain pass"}, true},
		{"odt", "odt", docgen.ODT([]string{"An open document about the harbour.", "Second line."}), []string{"An open document about the harbour.\nSecond line."}, true},
		{"empty docx", "docx", docgen.DOCX(nil), []string{""}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			pages, info := Text(context.Background(), bytes.NewReader(c.data), int64(len(c.data)), c.format, Limits{})
			if info.Reason != "" || info.Format != c.format || info.Pages != len(c.pages) || info.TextLayer != c.textLayer {
				t.Fatalf("info = %+v, want %s with %d pages, text layer %v", info, c.format, len(c.pages), c.textLayer)
			}
			if len(pages) != len(c.pages) {
				t.Fatalf("%d pages, want %d: %+v", len(pages), len(c.pages), pages)
			}
			for i, p := range pages {
				if p.N != i+1 || !strings.Contains(p.Text, c.pages[i]) || (c.pages[i] == "" && p.Text != "") {
					t.Errorf("page %d = %d %q, want it to hold %q", i+1, p.N, p.Text, c.pages[i])
				}
			}
			in := Inspect(context.Background(), bytes.NewReader(c.data), int64(len(c.data)), c.format, Limits{})
			if in != info {
				t.Errorf("Inspect = %+v, Text's info = %+v", in, info)
			}
		})
	}
}

// TestHostile: every hostile or broken document gives a one-line reason, quickly, and nothing else.
func TestHostile(t *testing.T) {
	text3 := read(t, "text3.pdf")
	for _, c := range []struct {
		name, format string
		data         []byte
		lim          Limits
		reason       string
	}{
		{"10,000 pages", "pdf", docgen.ManyPagesPDF(10000), Limits{}, "10000 pages, over the limit of 2000"},
		{"200x200-inch page", "pdf", docgen.HugePagePDF(200), Limits{}, "page 1 is 200x200 inches, over the limit of 100"},
		{"encrypted PDF", "pdf", read(t, "encrypted.pdf"), Limits{}, "encrypted: it needs a password"},
		{"encrypted PDF (generated)", "pdf", docgen.EncryptedPDF(), Limits{}, "encrypted: it needs a password"},
		{"truncated PDF (generated)", "pdf", docgen.Truncated(docgen.TextPDF([]string{"one", "two", "three"})), Limits{}, "damaged"},
		{"truncated PDF", "pdf", text3[:len(text3)/3], Limits{}, "damaged"},
		{"not a PDF", "pdf", []byte("hello, I am text"), Limits{}, "damaged: not a PDF pdfium can read"},
		{"empty PDF", "pdf", nil, Limits{}, "damaged: an empty file"},
		{"time limit", "pdf", docgen.ManyPagesPDF(2000), Limits{Timeout: time.Millisecond}, "reading it took longer than the limit of 1ms"},
		// pdfium's linear memory (three quarters of 32 MiB) cannot hold its own 18 MiB and the
		// 30 MB of the page's content: wazero refuses the growth, and the document is not read.
		{"pdfium's memory limit", "pdf", docgen.BigStreamPDF(30 << 20), Limits{MaxMemory: 32 << 20}, "damaged, or needs more than its 32 MiB of memory"},
		{"memory limit below pdfium's own", "pdf", text3, Limits{MaxMemory: 16 << 20}, "the memory limit of 16 MiB is below the 25 MiB pdfium needs to start"},
		{"docx zip bomb", "docx", docgen.ZipBombDOCX(4 << 30), Limits{}, "zip bomb: word/document.xml unzips to 4096 MiB, over the limit of 32 MiB"},
		{"docx zip bomb, lying header", "docx", docgen.LyingZipBombDOCX(4 << 20), Limits{}, "damaged: zip: not a valid zip file"},
		{"xlsx whose parts together pass the limit", "xlsx", docgen.XLSXSheets(bigSheet(), bigSheet(), bigSheet()), Limits{MaxUnzipped: 1 << 20}, "zip bomb: its parts unzip to more than the limit of 1 MiB"},
		{"encrypted docx", "docx", append([]byte{0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1}, make([]byte, 504)...), Limits{}, "encrypted"},
		{"docx not a zip", "docx", []byte("PK\x03\x04 broken"), Limits{}, "damaged: not a readable zip"},
		{"docx without its body", "docx", zipOf(t, part{"word/other.xml", "<x/>"}), Limits{}, "damaged: missing part word/document.xml"},
		{"xlsx without sheets", "xlsx", zipOf(t, part{"xl/workbook.xml", "<workbook/>"}), Limits{}, "damaged: no sheets"},
		{"broken XML", "pptx", zipOf(t, part{"ppt/slides/slide1.xml", "<p:sld><a:t>unclosed"}), Limits{}, "damaged"},
		{"unknown format", "rtf", []byte("{\\rtf1}"), Limits{}, `not a document format read here ("rtf")`},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			pages, info := Text(context.Background(), bytes.NewReader(c.data), int64(len(c.data)), c.format, c.lim)
			took := time.Since(start)
			if !strings.HasPrefix(info.Reason, c.reason) || strings.Contains(info.Reason, "\n") || pages != nil {
				t.Errorf("Text: reason %q (pages %d), want it to start %q", info.Reason, len(pages), c.reason)
			}
			if in := Inspect(context.Background(), bytes.NewReader(c.data), int64(len(c.data)), c.format, c.lim); !strings.HasPrefix(in.Reason, c.reason) {
				t.Errorf("Inspect: reason %q, want it to start %q", in.Reason, c.reason)
			}
			// Quickly: within the limit, with room for a slow, shared machine (and -race).
			if took > DefaultLimits.Timeout {
				t.Errorf("took %s", took)
			}
			t.Logf("%s in %s", info.Reason, took)
		})
	}
}

// bigSheet is a sheet of about 450 KB.
func bigSheet() [][]string {
	rows := make([][]string, 6000)
	for i := range rows {
		rows[i] = []string{"12345", "67890"}
	}
	return rows
}

func TestRender(t *testing.T) {
	text3, scan := read(t, "text3.pdf"), read(t, "scan2.pdf")
	for _, c := range []struct {
		name     string
		data     []byte
		page     int
		edge     int
		lim      Limits
		w, h     int
		errStart string
	}{
		{"text page (A4)", text3, 2, 1000, Limits{}, 707, 1000, ""},
		{"scanned page", scan, 2, 700, Limits{}, 496, 700, ""},
		{"no such page", scan, 3, 700, Limits{}, 0, 0, "no page 3: it has 2"},
		{"huge page", docgen.HugePagePDF(200), 1, 500, Limits{}, 0, 0, "page 1 is 200x200 inches"},
		{"over the memory limit", text3, 1, 8000, Limits{MaxMemory: 64 << 20}, 0, 0, "doc: a 8000 px page needs 244 MiB, over the memory limit"},
		{"encrypted", read(t, "encrypted.pdf"), 1, 500, Limits{}, 0, 0, "encrypted"},
		{"text within the same limit", text3, 1, 1000, Limits{MaxMemory: 32 << 20}, 707, 1000, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			img, err := Render(context.Background(), bytes.NewReader(c.data), int64(len(c.data)), c.page, c.edge, c.lim)
			if c.errStart != "" {
				if err == nil || !strings.HasPrefix(err.Error(), c.errStart) || img != nil {
					t.Fatalf("err = %v, want one starting %q", err, c.errStart)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b := img.Bounds()
			if b.Dx() != c.w || b.Dy() != c.h {
				t.Fatalf("rendered %v, want %dx%d", b, c.w, c.h)
			}
			// On white, with something drawn: the corner is white, some pixel is dark.
			if r, g, bl, _ := img.At(0, 0).RGBA(); r>>8 != 255 || g>>8 != 255 || bl>>8 != 255 {
				t.Errorf("corner is %v, want white", img.At(0, 0))
			}
			dark := false
			for y := b.Min.Y; y < b.Max.Y && !dark; y++ {
				for x := b.Min.X; x < b.Max.X; x++ {
					if r, _, _, _ := img.At(x, y).RGBA(); r>>8 < 100 {
						dark = true
						break
					}
				}
			}
			if !dark {
				t.Error("nothing drawn")
			}
		})
	}
}
