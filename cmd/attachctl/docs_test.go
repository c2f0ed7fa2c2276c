package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/attachctl/attachctl/scripts/docgen"
)

// mkdoc makes the documents of the document scripts (scripts/docgen, the one generator):
//
//	mkdoc text FILE SENTENCE...   a PDF with a text layer, one page a sentence
//	mkdoc scan N FILE             an image-only PDF of N pages
//	mkdoc many N FILE             a PDF of N empty pages
//	mkdoc huge INCHES FILE        a PDF of one INCHES×INCHES page
//	mkdoc encrypted FILE          a PDF that needs a password
//	mkdoc truncated FILE          the first half of a text PDF
//	mkdoc docx FILE PARAGRAPH...  a Word document
//	mkdoc xlsx FILE CELL...       a workbook of one row
//	mkdoc bomb BYTES FILE         a .docx whose document.xml unzips to BYTES
func init() { helperCmds["mkdoc"] = mkdoc }

func mkdoc(sc helper, args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("usage: mkdoc KIND [N] FILE [TEXT...]")
	}
	num := func() (int, error) {
		if len(args) < 3 {
			return 0, fmt.Errorf("%s: a number and a file", args[0])
		}
		return strconv.Atoi(args[1])
	}
	var b []byte
	file := args[1]
	switch args[0] {
	case "text":
		b = docgen.TextPDF(args[2:])
	case "docx":
		b = docgen.DOCX(args[2:])
	case "xlsx":
		b = docgen.XLSX([][]string{args[2:]})
	case "encrypted":
		b = docgen.EncryptedPDF()
	case "truncated":
		b = docgen.Truncated(docgen.TextPDF([]string{strings.Repeat("A page cut short. ", 20)}))
	case "scan", "many", "huge", "bomb":
		n, err := num()
		if err != nil {
			return err
		}
		file = args[2]
		switch args[0] {
		case "scan":
			b = docgen.ScanPDF(n)
		case "many":
			b = docgen.ManyPagesPDF(n)
		case "huge":
			b = docgen.HugePagePDF(float64(n))
		case "bomb":
			b = docgen.ZipBombDOCX(int64(n))
		}
	default:
		return fmt.Errorf("no kind %q", args[0])
	}
	return os.WriteFile(sc.abs(file), b, 0o644)
}
