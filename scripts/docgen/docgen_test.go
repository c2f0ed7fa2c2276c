package docgen

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/sniff"
)

// The documents are what they say: poppler reads the PDFs' text and pages, and sniff names each
// type as an agent's user would see it.
func TestDocuments(t *testing.T) {
	dir := t.TempDir()
	docs := map[string][]byte{
		"text.pdf": TextPDF([]string{"The first page says hello.", "Page two (with parens).", "Three"}),
		"scan.pdf": ScanPDF(2), "many.pdf": ManyPagesPDF(50), "huge.pdf": HugePagePDF(200), "enc.pdf": EncryptedPDF(),
		"a.docx": DOCX([]string{"Hello docx."}), "a.xlsx": XLSX([][]string{{"cell one", "cell two"}}),
		"a.pptx": PPTX([]string{"Slide one."}), "a.odt": ODT([]string{"Hello odt."}), "bomb.docx": ZipBombDOCX(50 << 20),
	}
	want := map[string]string{".pdf": "application/pdf", ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
		".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
		".odt": "application/vnd.oasis.opendocument.text"}
	for name, b := range docs {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		head := b[:min(len(b), 8<<10)]
		if mime, kind := sniff.Content(head, len(head) == len(b)); mime != want[filepath.Ext(name)] || kind != "document" {
			t.Errorf("%s sniffs as %s %s", name, mime, kind)
		}
	}
	if len(docs["bomb.docx"]) > 1<<20 {
		t.Errorf("the zip bomb is %d bytes", len(docs["bomb.docx"]))
	}
	if _, err := exec.LookPath("pdftotext"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("pdftotext (poppler-utils) is missing")
		}
		t.Skip("no pdftotext")
	}
	out, err := exec.Command("pdftotext", filepath.Join(dir, "text.pdf"), "-").Output()
	if err != nil || !strings.Contains(string(out), "Page two (with parens).") {
		t.Errorf("pdftotext: %v: %q", err, out)
	}
	for name, pages := range map[string]string{"scan.pdf": "2", "many.pdf": "50"} {
		out, err := exec.Command("pdfinfo", filepath.Join(dir, name)).Output()
		if err != nil || !strings.Contains(strings.Join(strings.Fields(string(out)), " "), "Pages: "+pages+" ") {
			t.Errorf("pdfinfo %s: %v: %s", name, err, out)
		}
	}
	if out, err := exec.Command("pdftotext", filepath.Join(dir, "enc.pdf"), "-").CombinedOutput(); err == nil {
		t.Errorf("the encrypted PDF opens without its password: %s", out)
	}
}
