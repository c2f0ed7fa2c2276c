package doc

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
)

// The office files and hostile PDFs of the tests are made here, at test time, with no tool.

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

const (
	nsW = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"`
	nsR = `xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"`
	nsA = `xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"`
)

// docxOf is a .docx whose body has one paragraph per string; "\f" in a string is a page break.
func docxOf(t testing.TB, paras ...string) []byte {
	var body strings.Builder
	for _, p := range paras {
		body.WriteString("<w:p>")
		for i, run := range strings.Split(p, "\f") {
			if i > 0 {
				body.WriteString(`<w:r><w:br w:type="page"/></w:r>`)
			}
			fmt.Fprintf(&body, `<w:r><w:t xml:space="preserve">%s</w:t></w:r>`, run)
		}
		body.WriteString("</w:p>")
	}
	return zipOf(t,
		part{"[Content_Types].xml", `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`},
		part{"word/document.xml", `<?xml version="1.0" encoding="UTF-8"?><w:document ` + nsW + `><w:body>` + body.String() + `</w:body></w:document>`})
}

// xlsxOf is a .xlsx with one sheet per [][]string (rows of cells), listed in the workbook in
// the reverse of their part names' order (so the order read must come from the workbook); text
// cells go through the shared strings.
func xlsxOf(t testing.TB, sheets ...[][]string) []byte {
	var shared []string
	index := map[string]int{}
	var parts []part
	var list, rels strings.Builder
	for i, rows := range sheets {
		var sd strings.Builder
		for r, row := range rows {
			fmt.Fprintf(&sd, `<row r="%d">`, r+1)
			for c, cell := range row {
				ref := fmt.Sprintf("%c%d", 'A'+c, r+1)
				if _, err := fmt.Sscanf(cell, "%g", new(float64)); err == nil {
					fmt.Fprintf(&sd, `<c r="%s"><v>%s</v></c>`, ref, cell)
					continue
				}
				k, ok := index[cell]
				if !ok {
					k = len(shared)
					index[cell] = k
					shared = append(shared, cell)
				}
				fmt.Fprintf(&sd, `<c r="%s" t="s"><v>%d</v></c>`, ref, k)
			}
			sd.WriteString("</row>")
		}
		n := len(sheets) - i // part number: reversed
		parts = append(parts, part{fmt.Sprintf("xl/worksheets/sheet%d.xml", n),
			`<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>` + sd.String() + `</sheetData></worksheet>`})
		fmt.Fprintf(&list, `<sheet name="S%d" sheetId="%d" r:id="rId%d"/>`, i+1, i+1, n)
		fmt.Fprintf(&rels, `<Relationship Id="rId%d" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet%d.xml"/>`, n, n)
	}
	var ss strings.Builder
	for _, s := range shared {
		fmt.Fprintf(&ss, "<si><t>%s</t></si>", s)
	}
	return zipOf(t, append(parts,
		part{"xl/workbook.xml", `<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" ` + nsR + `><sheets>` + list.String() + `</sheets></workbook>`},
		part{"xl/_rels/workbook.xml.rels", `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` + rels.String() + `</Relationships>`},
		part{"xl/sharedStrings.xml", `<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">` + ss.String() + `</sst>`})...)
}

// pptxOf is a .pptx with one slide per []string (its paragraphs), in presentation order.
func pptxOf(t testing.TB, slides ...[]string) []byte {
	var parts []part
	var list, rels strings.Builder
	for i, paras := range slides {
		var sp strings.Builder
		for _, p := range paras {
			fmt.Fprintf(&sp, `<a:p><a:r><a:t>%s</a:t></a:r></a:p>`, p)
		}
		parts = append(parts, part{fmt.Sprintf("ppt/slides/slide%d.xml", i+1),
			`<p:sld ` + nsA + `><p:cSld><p:spTree><p:sp><p:txBody>` + sp.String() + `</p:txBody></p:sp></p:spTree></p:cSld></p:sld>`})
		fmt.Fprintf(&list, `<p:sldId id="%d" r:id="rId%d"/>`, 256+i, i+1)
		fmt.Fprintf(&rels, `<Relationship Id="rId%d" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide" Target="slides/slide%d.xml"/>`, i+1, i+1)
	}
	return zipOf(t, append(parts,
		part{"ppt/presentation.xml", `<p:presentation ` + nsA + ` ` + nsR + `><p:sldIdLst>` + list.String() + `</p:sldIdLst></p:presentation>`},
		part{"ppt/_rels/presentation.xml.rels", `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` + rels.String() + `</Relationships>`})...)
}

// odtOf is an .odt with one paragraph per string.
func odtOf(t testing.TB, paras ...string) []byte {
	var b strings.Builder
	for _, p := range paras {
		fmt.Fprintf(&b, "<text:p>%s</text:p>", p)
	}
	return zipOf(t, part{"mimetype", "application/vnd.oasis.opendocument.text"},
		part{"content.xml", `<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:text>` + b.String() + `</office:text></office:body></office:document-content>`})
}

// bombDocx is a .docx whose document.xml unzips to about n bytes of spaces in one paragraph,
// from a few KB. Its deflate stream is one compressed MiB repeated (each copy a block that
// refers only to itself), so that making it costs no compression of n bytes; its header tells
// the truth about its size when honest, else says 1000 bytes (the stream then runs past what
// the header says).
func bombDocx(t testing.TB, n int, honest bool) []byte {
	head := []byte(`<w:document ` + nsW + `><w:body><w:p><w:r><w:t>`)
	tail := []byte(`</w:t></w:r></w:p></w:body></w:document>`)
	chunk := bytes.Repeat([]byte{' '}, 1<<20)
	block := func(b []byte) []byte {
		var out bytes.Buffer
		fw, _ := flate.NewWriter(&out, flate.BestCompression)
		fw.Write(b)
		fw.Flush()
		return out.Bytes()
	}
	var body bytes.Buffer
	body.Write(block(head))
	crc := crc32.ChecksumIEEE(head)
	size := uint64(len(head))
	one := block(chunk)
	for range max(n>>20, 1) {
		body.Write(one)
		crc = crc32.Update(crc, crc32.IEEETable, chunk)
		size += uint64(len(chunk))
	}
	var last bytes.Buffer
	fw, _ := flate.NewWriter(&last, flate.BestCompression)
	fw.Write(tail)
	fw.Close()
	body.Write(last.Bytes())
	crc = crc32.Update(crc, crc32.IEEETable, tail)
	size += uint64(len(tail))
	if !honest {
		size = 1000
	}
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "word/document.xml", Method: zip.Deflate,
		CRC32: crc, CompressedSize64: uint64(body.Len()), UncompressedSize64: size})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(body.Bytes())
	zw.Close()
	return b.Bytes()
}

// pdfOf is a PDF of n pages of w x h points, all sharing one content stream that writes text
// (or draws nothing when text is ""). Written by hand with a correct cross-reference table.
func pdfOf(n int, w, h float64, text string) []byte {
	var b bytes.Buffer
	var offs []int
	obj := func(body string) {
		offs = append(offs, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", len(offs), body)
	}
	b.WriteString("%PDF-1.4\n")
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	var kids strings.Builder
	for i := range n {
		fmt.Fprintf(&kids, "%d 0 R ", 5+i)
	}
	obj(fmt.Sprintf("<< /Type /Pages /Count %d /Kids [%s] >>", n, kids.String()))
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	content := ""
	if text != "" {
		content = fmt.Sprintf("BT /F1 12 Tf 72 %g Td (%s) Tj ET", h-72, text)
	}
	obj(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content))
	for range n {
		obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %g %g] /Resources << /Font << /F1 3 0 R >> >> /Contents 4 0 R >>", w, h))
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offs)+1, xref)
	return b.Bytes()
}
