// Package docgen makes the documents the tests of resolve's document delivery and of the
// document engine (shrink/doc) read: PDFs with a text layer, scanned (image-only) PDFs, OOXML and
// ODF files holding known sentences, and the hostile ones (10,000 pages, a 200×200-inch page, an
// encrypted or truncated PDF, a zip bomb inside a .docx). Pure Go, no tools, the same bytes on
// every run, so one generator serves every test (docs/resolve.md, "Documents").
package docgen

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/zlib"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"strconv"
	"strings"
)

// PDF assembles a PDF 1.4 from objects 1..n (objs[i] is object i+1's body, object 1 the
// catalog) with a correct xref; trailer adds entries to the trailer dictionary.
func PDF(objs []string, trailer string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	offs := make([]int, len(objs))
	for i, o := range objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	x := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R %s>>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, trailer, x)
	return b.Bytes()
}

func stream(dict, data string) string {
	return fmt.Sprintf("<< %s /Length %d >>\nstream\n%s\nendstream", dict, len(data), data)
}

// pdfString escapes s as a PDF literal string.
func pdfString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `(`, `\(`, `)`, `\)`)
	return "(" + r.Replace(s) + ")"
}

// pages builds a catalog (1), a page tree (2), a font (3) and, per page, a page object and its
// content stream (plus extra objects per page from more).
func pages(n int, w, h float64, content func(i int) string, res func(i int) string, more func(i, first int) []string) []byte {
	objs := []string{"<< /Type /Catalog /Pages 2 0 R >>", "", "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"}
	var kids []string
	for i := range n {
		page := len(objs) + 1
		kids = append(kids, fmt.Sprintf("%d 0 R", page))
		r := "/Font << /F1 3 0 R >>"
		if res != nil {
			r += " " + res(i)
		}
		objs = append(objs, fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %g %g] /Resources << %s >> /Contents %d 0 R >>", w, h, r, page+1))
		objs = append(objs, stream("", content(i)))
		if more != nil {
			objs = append(objs, more(i, len(objs)+1)...)
		}
	}
	objs[1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), n)
	return PDF(objs, "")
}

// TextPDF is a letter-size PDF with one page per string, each drawn in Helvetica as one line per
// line of the string: a real text layer.
func TextPDF(text []string) []byte {
	return pages(len(text), 612, 792, func(i int) string {
		var c strings.Builder
		c.WriteString("BT /F1 12 Tf 72 720 Td 14 TL\n")
		for _, line := range strings.Split(text[i], "\n") {
			c.WriteString(pdfString(line) + " Tj T*\n")
		}
		c.WriteString("ET")
		return c.String()
	}, nil, nil)
}

// ScanPDF is an image-only PDF of n letter-size pages, as a scanner makes: each page one JPEG
// (different on each page) and no text.
func ScanPDF(n int) []byte {
	return pages(n, 612, 792, func(i int) string {
		return "q 612 0 0 792 0 0 cm /Im1 Do Q"
	}, func(i int) string {
		return fmt.Sprintf("/XObject << /Im1 %d 0 R >>", 3+3*i+3)
	}, func(i, first int) []string {
		img := Scan(i, 425, 550)
		return []string{stream(fmt.Sprintf("/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /DCTDecode", 425, 550), string(img))}
	})
}

// BigStreamPDF is one letter-size page whose content stream, deflated, unzips to about n bytes
// (spaces, then one line of text): small on disk, and a reader holds the n bytes to parse them,
// for the memory limit of whatever reads it.
func BigStreamPDF(n int) []byte {
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestSpeed)
	zw.Write(bytes.Repeat([]byte{' '}, n))
	io.WriteString(zw, "\nBT /F1 12 Tf 72 720 Td (After a long stream.) Tj ET")
	zw.Close()
	return PDF([]string{"<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>",
		stream("/Filter /FlateDecode", z.String())}, "")
}

// Scan is the JPEG of page i of a scan: paper with dark bars of "text", shifted by page.
func Scan(i, w, h int) []byte {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.RGBA{245, 242, 230, 255}
			if line := (y - 40 - 7*i) % 24; y > 40 && y < h-40 && x > 40 && x < w-40-(y*13+i*31)%90 && line >= 0 && line < 9 {
				c = color.RGBA{30, 30, 40, 255}
			}
			c.R -= uint8((x*7 + y*3 + i*11) % 9) // grain
			m.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	jpeg.Encode(&b, m, &jpeg.Options{Quality: 80})
	return b.Bytes()
}

// ManyPagesPDF has n empty letter-size pages.
func ManyPagesPDF(n int) []byte {
	return pages(n, 612, 792, func(int) string { return "" }, nil, nil)
}

// HugePagePDF has one page of inches × inches with a line of text on it.
func HugePagePDF(inches float64) []byte {
	pt := inches * 72
	return pages(1, pt, pt, func(int) string { return "BT /F1 12 Tf 72 72 Td (A very large page.) Tj ET" }, nil, nil)
}

// EncryptedPDF is a one-page PDF under the standard security handler (RC4, 40-bit) with a user
// password: nothing reads it without the password.
func EncryptedPDF() []byte {
	b := TextPDF([]string{"This text is locked."})
	// The same PDF with an /Encrypt dictionary in its trailer: its O and U entries belong to a
	// password that is not empty, so the empty password every reader tries first fails.
	enc := "/Encrypt << /Filter /Standard /V 1 /R 2 /Length 40 /P -44 " +
		"/O <" + strings.Repeat("5a", 32) + "> /U <" + strings.Repeat("a5", 32) + "> >> " +
		"/ID [<00112233445566778899aabbccddeeff> <00112233445566778899aabbccddeeff>] "
	return bytes.Replace(b, []byte("/Root 1 0 R "), []byte("/Root 1 0 R "+enc), 1)
}

// Truncated is the first half of b: a download cut short.
func Truncated(b []byte) []byte { return b[:len(b)/2] }

// zipOf writes the files (name, content pairs, in order) as a zip, deflated.
func zipOf(files ...string) []byte {
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	for i := 0; i+1 < len(files); i += 2 {
		w, _ := z.Create(files[i])
		io.WriteString(w, files[i+1])
	}
	z.Close()
	return b.Bytes()
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

const rels = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="%s"/></Relationships>`

const ctHead = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>`

// DOCX is a Word document with one paragraph per string.
func DOCX(paras []string) []byte {
	return zipOf("[Content_Types].xml", ctHead+`<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`,
		"_rels/.rels", fmt.Sprintf(rels, "word/document.xml"),
		"word/document.xml", docxBody(paras))
}

func docxBody(paras []string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>`)
	for _, p := range paras {
		b.WriteString(`<w:p><w:r><w:t xml:space="preserve">` + xmlEscape(p) + `</w:t></w:r></w:p>`)
	}
	b.WriteString(`</w:body></w:document>`)
	return b.String()
}

// XLSX is a workbook of one sheet whose rows hold the cells given, as shared strings.
func XLSX(rows [][]string) []byte {
	var ss, sheet strings.Builder
	n := 0
	sheet.WriteString(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>`)
	for i, row := range rows {
		fmt.Fprintf(&sheet, `<row r="%d">`, i+1)
		for j, c := range row {
			fmt.Fprintf(&sheet, `<c r="%c%d" t="s"><v>%d</v></c>`, 'A'+j, i+1, n)
			ss.WriteString(`<si><t xml:space="preserve">` + xmlEscape(c) + `</t></si>`)
			n++
		}
		sheet.WriteString(`</row>`)
	}
	sheet.WriteString(`</sheetData></worksheet>`)
	return zipOf("[Content_Types].xml", ctHead+`<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/><Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>`,
		"_rels/.rels", fmt.Sprintf(rels, "xl/workbook.xml"),
		"xl/workbook.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>`,
		"xl/_rels/workbook.xml.rels", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/></Relationships>`,
		"xl/sharedStrings.xml", fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="%d" uniqueCount="%d">%s</sst>`, n, n, ss.String()),
		"xl/worksheets/sheet1.xml", sheet.String())
}

// PPTX is a presentation with one text box a slide.
func PPTX(slides []string) []byte {
	files := []string{"[Content_Types].xml", "", "_rels/.rels", fmt.Sprintf(rels, "ppt/presentation.xml")}
	ct := ctHead + `<Override PartName="/ppt/presentation.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"/>`
	var ids, prels strings.Builder
	for i, s := range slides {
		ct += fmt.Sprintf(`<Override PartName="/ppt/slides/slide%d.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.slide+xml"/>`, i+1)
		fmt.Fprintf(&ids, `<p:sldId id="%d" r:id="rId%d"/>`, 256+i, i+1)
		fmt.Fprintf(&prels, `<Relationship Id="rId%d" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide" Target="slides/slide%d.xml"/>`, i+1, i+1)
		files = append(files, fmt.Sprintf("ppt/slides/slide%d.xml", i+1),
			`<?xml version="1.0" encoding="UTF-8" standalone="yes"?><p:sld xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"><p:cSld><p:spTree><p:sp><p:txBody><a:p><a:r><a:t>`+xmlEscape(s)+`</a:t></a:r></a:p></p:txBody></p:sp></p:spTree></p:cSld></p:sld>`)
	}
	files[1] = ct + `</Types>`
	files = append(files, "ppt/presentation.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><p:presentation xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><p:sldIdLst>`+ids.String()+`</p:sldIdLst></p:presentation>`,
		"ppt/_rels/presentation.xml.rels", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">`+prels.String()+`</Relationships>`)
	return zipOf(files...)
}

// ODT is an OpenDocument text with one paragraph per string; its mimetype entry comes first,
// stored, as the format asks.
func ODT(paras []string) []byte {
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	mt := "application/vnd.oasis.opendocument.text"
	w, _ := z.CreateHeader(&zip.FileHeader{Name: "mimetype", Method: zip.Store, CRC32: crc32.ChecksumIEEE([]byte(mt)),
		CompressedSize64: uint64(len(mt)), UncompressedSize64: uint64(len(mt))})
	io.WriteString(w, mt)
	var body strings.Builder
	for _, p := range paras {
		body.WriteString("<text:p>" + xmlEscape(p) + "</text:p>")
	}
	w, _ = z.Create("content.xml")
	io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:text>`+body.String()+`</office:text></office:body></office:document-content>`)
	w, _ = z.Create("META-INF/manifest.xml")
	io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"><manifest:file-entry manifest:full-path="/" manifest:media-type="`+mt+`"/></manifest:manifest>`)
	z.Close()
	return b.Bytes()
}

// DOCXPages is a Word document whose pages (each a list of paragraphs) are apart by page breaks.
func DOCXPages(pages ...[]string) []byte {
	var paras []string
	for i, pg := range pages {
		if i > 0 {
			paras = append(paras, "\f")
		}
		paras = append(paras, pg...)
	}
	body := strings.ReplaceAll(docxBody(paras), `<w:t xml:space="preserve">`+"\f"+`</w:t>`, `<w:br w:type="page"/>`)
	return zipOf("[Content_Types].xml", ctHead+`<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`,
		"_rels/.rels", fmt.Sprintf(rels, "word/document.xml"),
		"word/document.xml", body)
}

// XLSXSheets is a workbook of several sheets (rows of cells; a cell that is a number is a number,
// the rest shared strings). The workbook lists them in the order given, but their parts are
// numbered the other way round (sheet1.xml is the last), as in a workbook whose sheets were
// moved: a reader must take the order from the workbook.
func XLSXSheets(sheets ...[][]string) []byte {
	var shared []string
	index := map[string]int{}
	var files []string
	var list, wrels, ct strings.Builder
	for i, rows := range sheets {
		var sd strings.Builder
		for r, row := range rows {
			fmt.Fprintf(&sd, `<row r="%d">`, r+1)
			for c, cell := range row {
				ref := fmt.Sprintf("%c%d", 'A'+c, r+1)
				if _, err := strconv.ParseFloat(cell, 64); err == nil {
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
		n := len(sheets) - i
		files = append(files, fmt.Sprintf("xl/worksheets/sheet%d.xml", n),
			`<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>`+sd.String()+`</sheetData></worksheet>`)
		fmt.Fprintf(&list, `<sheet name="Sheet%d" sheetId="%d" r:id="rId%d"/>`, i+1, i+1, n)
		fmt.Fprintf(&wrels, `<Relationship Id="rId%d" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet%d.xml"/>`, n, n)
		fmt.Fprintf(&ct, `<Override PartName="/xl/worksheets/sheet%d.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>`, n)
	}
	var ss strings.Builder
	for _, c := range shared {
		ss.WriteString(`<si><t xml:space="preserve">` + xmlEscape(c) + `</t></si>`)
	}
	return zipOf(append([]string{"[Content_Types].xml", ctHead + `<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>` + ct.String() + `</Types>`,
		"_rels/.rels", fmt.Sprintf(rels, "xl/workbook.xml"),
		"xl/workbook.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets>` + list.String() + `</sheets></workbook>`,
		"xl/_rels/workbook.xml.rels", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` + wrels.String() + `<Relationship Id="rIdS" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/></Relationships>`,
		"xl/sharedStrings.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">` + ss.String() + `</sst>`}, files...)...)
}

// LyingZipBombDOCX is ZipBombDOCX whose zip header says document.xml unzips to 1000 bytes: a
// reader that trusts headers reads on past them.
func LyingZipBombDOCX(unzipped int64) []byte { return zipBomb(unzipped, true) }

// ZipBombDOCX is a .docx whose word/document.xml unzips to about unzipped bytes (one paragraph
// of spaces), from a small file, whatever the size asked (gigabytes cost nothing to make): its
// deflate stream is one compressed MiB of spaces repeated, each copy a block that refers only to
// itself.
func ZipBombDOCX(unzipped int64) []byte { return zipBomb(unzipped, false) }

func zipBomb(unzipped int64, lie bool) []byte {
	head := []byte(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t xml:space="preserve">`)
	tail := []byte(`</w:t></w:r></w:p></w:body></w:document>`)
	deflate := func(b []byte, last bool) []byte {
		var out bytes.Buffer
		fw, _ := flate.NewWriter(&out, flate.BestCompression)
		fw.Write(b)
		if last {
			fw.Close()
		} else {
			fw.Flush()
		}
		return out.Bytes()
	}
	chunk := bytes.Repeat([]byte{' '}, 1<<20)
	var body bytes.Buffer
	body.Write(deflate(head, false))
	crc, size := crc32.ChecksumIEEE(head), uint64(len(head))
	one := deflate(chunk, false)
	for range max(unzipped>>20, 1) {
		body.Write(one)
		crc = crc32.Update(crc, crc32.IEEETable, chunk)
		size += uint64(len(chunk))
	}
	body.Write(deflate(tail, true))
	crc, size = crc32.Update(crc, crc32.IEEETable, tail), size+uint64(len(tail))
	if lie {
		size = 1000
	}
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	w, _ := z.Create("[Content_Types].xml")
	io.WriteString(w, ctHead+`<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`)
	w, _ = z.Create("_rels/.rels")
	fmt.Fprintf(w, rels, "word/document.xml")
	w, _ = z.CreateRaw(&zip.FileHeader{Name: "word/document.xml", Method: zip.Deflate, CRC32: crc,
		CompressedSize64: uint64(body.Len()), UncompressedSize64: size})
	w.Write(body.Bytes())
	z.Close()
	return b.Bytes()
}
