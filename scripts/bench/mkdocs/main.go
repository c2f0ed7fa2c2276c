// Command mkdocs writes the documents of the docs section of scripts/bench.sh (with
// scripts/docgen, the generator the tests use): N text PDFs of P pages of prose, and N scanned
// (image-only) PDFs of P pages.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/attachctl/attachctl/scripts/docgen"
)

func main() {
	out := flag.String("out", "", "folder to write text/ and scan/ into")
	n := flag.Int("n", 30, "documents of each kind")
	pages := flag.Int("pages", 10, "pages a document")
	flag.Parse()
	if *out == "" {
		log.Fatal("mkdocs: -out FOLDER")
	}
	for _, d := range []string{"text", "scan"} {
		if err := os.MkdirAll(filepath.Join(*out, d), 0o755); err != nil {
			log.Fatal(err)
		}
	}
	for i := range *n {
		var text []string
		for p := range *pages {
			var lines []string
			for l := range 40 { // about a page of prose: 40 lines of 80 characters
				lines = append(lines, fmt.Sprintf("Document %d, page %d, line %d: the survey counted herons, bridges and jars of marmalade.", i+1, p+1, l+1))
			}
			text = append(text, strings.Join(lines, "\n"))
		}
		write(filepath.Join(*out, "text", fmt.Sprintf("report-%02d.pdf", i+1)), docgen.TextPDF(text))
		// A comment after the end makes each scan a document of its own (its own BLAKE3, so its
		// own cache entry and pages), as a user's scans are; the pages look the same.
		scan := fmt.Appendf(docgen.ScanPDF(*pages), "%% scan %d\n", i+1)
		write(filepath.Join(*out, "scan", fmt.Sprintf("scan-%02d.pdf", i+1)), scan)
	}
}

func write(path string, b []byte) {
	if err := os.WriteFile(path, b, 0o644); err != nil {
		log.Fatal(err)
	}
}
