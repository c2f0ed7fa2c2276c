package doc

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Office files (.docx, .xlsx, .pptx from OOXML, .odt from OpenDocument) are zips of XML. Their
// text is read with archive/zip and encoding/xml as a stream of tokens: what is held is the text
// found, and every byte read out of the zip counts against Limits.MaxUnzipped, whatever the zip's
// headers claim (a zip bomb stops at the limit).

// maxEntries bounds the zip's directory: an office file has tens of parts, not millions.
const maxEntries = 20000

var (
	errUnzipped = errors.New("unzipped past the limit")
	errMissing  = errors.New("missing part")
)

// bombError is a part whose header says it unzips past the limit.
type bombError struct {
	name  string
	size  uint64
	limit int64
}

func (e *bombError) Error() string {
	return fmt.Sprintf("zip bomb: %s unzips to %d MiB, over the limit of %d MiB", e.name, e.size>>20, e.limit>>20)
}

// office is one open office file.
type office struct {
	ctx  context.Context
	lim  Limits
	zr   *zip.Reader
	read int64 // uncompressed bytes read so far, all parts together
}

// counted reads a part, failing once the document's parts together pass the limit.
type counted struct {
	o *office
	r io.Reader
}

func (c *counted) Read(p []byte) (int, error) {
	if err := c.o.ctx.Err(); err != nil {
		return 0, err
	}
	if c.o.read >= c.o.lim.MaxUnzipped {
		return 0, errUnzipped
	}
	if left := c.o.lim.MaxUnzipped - c.o.read; int64(len(p)) > left {
		p = p[:left+1] // one byte more than allowed tells a part that ends at the limit from one past it
	}
	n, err := c.r.Read(p)
	c.o.read += int64(n)
	if c.o.read > c.o.lim.MaxUnzipped {
		return n, errUnzipped
	}
	return n, err
}

func (o *office) file(name string) *zip.File {
	for _, f := range o.zr.File {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// walk streams the XML of part name to fn, one token at a time.
func (o *office) walk(name string, fn func(t xml.Token)) error {
	f := o.file(name)
	if f == nil {
		return fmt.Errorf("%w %s", errMissing, name)
	}
	// A part whose header says it is too large is refused unread; one whose header lies is
	// stopped by archive/zip (it checks the size it reads against the header) or by counted.
	if f.UncompressedSize64 > uint64(o.lim.MaxUnzipped) {
		return &bombError{name: name, size: f.UncompressedSize64, limit: o.lim.MaxUnzipped}
	}
	rc, err := f.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	// Token, not RawToken: it checks that elements close, so a cut part is found damaged.
	d := xml.NewDecoder(&counted{o: o, r: rc})
	for {
		t, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		fn(t)
	}
}

// rels reads a part's relationships: id to the target's name in the zip.
func (o *office) rels(part string) map[string]string {
	dir, file := path.Split(part)
	m := map[string]string{}
	o.walk(dir+"_rels/"+file+".rels", func(t xml.Token) {
		if se, ok := t.(xml.StartElement); ok && se.Name.Local == "Relationship" {
			id, target := attr(se, "Id"), attr(se, "Target")
			if strings.HasPrefix(target, "/") {
				target = strings.TrimPrefix(target, "/")
			} else {
				target = path.Join(dir, target)
			}
			m[id] = target
		}
	})
	return m
}

// ordered gives the parts listed in order by the elements named list in part (a workbook's
// sheets, a presentation's slides), through its relationships; when that fails, the parts
// named prefix<N>.xml in the order of N.
func (o *office) ordered(part, list, prefix string) []string {
	rels := o.rels(part)
	var names []string
	o.walk(part, func(t xml.Token) {
		if se, ok := t.(xml.StartElement); ok && se.Name.Local == list {
			if target, ok := rels[attr(se, "id")]; ok {
				names = append(names, target)
			}
		}
	})
	if len(names) > 0 {
		return names
	}
	type numbered struct {
		n    int
		name string
	}
	var found []numbered
	for _, f := range o.zr.File {
		if rest, ok := strings.CutPrefix(f.Name, prefix); ok {
			if n, err := strconv.Atoi(strings.TrimSuffix(rest, ".xml")); err == nil && strings.HasSuffix(rest, ".xml") {
				found = append(found, numbered{n, f.Name})
			}
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].n < found[j].n })
	for _, f := range found {
		names = append(names, f.name)
	}
	return names
}

// attr gives the value of the attribute with local name local ("" when there is none).
func attr(se xml.StartElement, local string) string {
	for _, a := range se.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

// textBuf gathers a page's text: runs of text, tabs and line ends.
type textBuf struct{ b strings.Builder }

func (t *textBuf) str(s string) { t.b.WriteString(s) }

// line ends a paragraph or row, never with a blank line run longer than one.
func (t *textBuf) line() {
	s := t.b.String()
	if s == "" || strings.HasSuffix(s, "\n\n") {
		return
	}
	t.b.WriteByte('\n')
}

func (t *textBuf) take() string {
	s := strings.TrimSpace(t.b.String())
	t.b.Reset()
	return s
}

func textOOXML(ctx context.Context, r io.ReaderAt, size int64, format string, lim Limits) (pages []Page, info Info) {
	lim = lim.orDefault()
	info = Info{Format: format}
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	defer func() {
		// The readers are plain Go; a panic here is a bug, but a document must not stop the run.
		if v := recover(); v != nil {
			pages, info.Reason = nil, fmt.Sprintf("damaged: the reader failed (%v)", v)
		}
	}()
	head := make([]byte, 8)
	if n, _ := r.ReadAt(head, 0); n == 8 && bytes.Equal(head, []byte{0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1}) {
		info.Reason = "encrypted (a password-protected office file is not a zip), or an old binary Office file"
		return nil, info
	}
	zr, err := zip.NewReader(r, size)
	if err != nil {
		info.Reason = "damaged: not a readable zip (" + err.Error() + ")"
		return nil, info
	}
	if len(zr.File) > maxEntries {
		info.Reason = fmt.Sprintf("%d parts in its zip, over the limit of %d", len(zr.File), maxEntries)
		return nil, info
	}
	o := &office{ctx: ctx, lim: lim, zr: zr}
	switch format {
	case "docx":
		pages, err = o.docx()
	case "xlsx":
		pages, err = o.xlsx()
	case "pptx":
		pages, err = o.pptx()
	case "odt":
		pages, err = o.odt()
	}
	switch {
	case err == nil && len(pages) > lim.MaxPages:
		err = fmt.Errorf("%d pages, over the limit of %d", len(pages), lim.MaxPages)
	case errors.As(err, new(*bombError)):
	case errors.Is(err, errUnzipped):
		err = fmt.Errorf("zip bomb: its parts unzip to more than the limit of %d MiB", lim.MaxUnzipped>>20)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		err = fmt.Errorf("reading it took longer than the limit of %s", lim.Timeout)
	case err != nil:
		err = fmt.Errorf("damaged: %v", err)
	}
	if err != nil {
		info.Reason = err.Error()
		return nil, info
	}
	info.Pages = len(pages)
	for _, p := range pages {
		if p.Text != "" {
			info.TextLayer = true
		}
	}
	return pages, info
}

// docx: the body's paragraphs; a page break starts a new page.
func (o *office) docx() ([]Page, error) {
	var pages []Page
	var t textBuf
	in := false // inside <w:t>
	err := o.walk("word/document.xml", func(tok xml.Token) {
		switch e := tok.(type) {
		case xml.StartElement:
			switch e.Name.Local {
			case "t":
				in = true
			case "tab":
				t.str("\t")
			case "br", "cr":
				if attr(e, "type") == "page" {
					pages = append(pages, Page{N: len(pages) + 1, Text: t.take()})
				} else {
					t.str("\n")
				}
			}
		case xml.EndElement:
			switch e.Name.Local {
			case "t":
				in = false
			case "p", "tr":
				t.line()
			case "tc":
				t.str("\t")
			}
		case xml.CharData:
			if in {
				t.str(string(e))
			}
		}
	})
	pages = append(pages, Page{N: len(pages) + 1, Text: t.take()})
	return pages, err
}

// pptx: one page per slide, in the presentation's order.
func (o *office) pptx() ([]Page, error) {
	var pages []Page
	for _, name := range o.ordered("ppt/presentation.xml", "sldId", "ppt/slides/slide") {
		var t textBuf
		in := false
		err := o.walk(name, func(tok xml.Token) {
			switch e := tok.(type) {
			case xml.StartElement:
				switch e.Name.Local {
				case "t":
					in = true
				case "br":
					t.str("\n")
				}
			case xml.EndElement:
				switch e.Name.Local {
				case "t":
					in = false
				case "p":
					t.line()
				}
			case xml.CharData:
				if in {
					t.str(string(e))
				}
			}
		})
		if err != nil {
			return nil, err
		}
		pages = append(pages, Page{N: len(pages) + 1, Text: t.take()})
	}
	if pages == nil {
		return nil, errors.New("no slides")
	}
	return pages, nil
}

// xlsx: one page per sheet, in the workbook's order; a row per line, cells apart by tabs,
// shared strings resolved.
func (o *office) xlsx() ([]Page, error) {
	var shared []string
	var si textBuf
	in := false
	err := o.walk("xl/sharedStrings.xml", func(tok xml.Token) {
		switch e := tok.(type) {
		case xml.StartElement:
			if e.Name.Local == "t" {
				in = true
			}
		case xml.EndElement:
			switch e.Name.Local {
			case "t":
				in = false
			case "si":
				shared = append(shared, si.b.String())
				si.b.Reset()
			}
		case xml.CharData:
			if in {
				si.str(string(e))
			}
		}
	})
	if err != nil && !errors.Is(err, errMissing) {
		return nil, err
	}
	var pages []Page
	for _, name := range o.ordered("xl/workbook.xml", "sheet", "xl/worksheets/sheet") {
		var t textBuf
		var typ string
		var v strings.Builder
		in, cells := false, 0
		err := o.walk(name, func(tok xml.Token) {
			switch e := tok.(type) {
			case xml.StartElement:
				switch e.Name.Local {
				case "c":
					typ = attr(e, "t")
					v.Reset()
				case "v", "t":
					in = true
				}
			case xml.EndElement:
				switch e.Name.Local {
				case "v", "t":
					in = false
				case "c":
					s := v.String()
					if typ == "s" {
						if i, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && i >= 0 && i < len(shared) {
							s = shared[i]
						}
					}
					if cells > 0 {
						t.str("\t")
					}
					t.str(s)
					cells++
				case "row":
					if cells > 0 {
						t.str("\n")
					}
					cells = 0
				}
			case xml.CharData:
				if in {
					v.Write(e)
				}
			}
		})
		if err != nil {
			return nil, err
		}
		pages = append(pages, Page{N: len(pages) + 1, Text: t.take()})
	}
	if pages == nil {
		return nil, errors.New("no sheets")
	}
	return pages, nil
}

// odt: the text of paragraphs and headings of content.xml, as one page.
func (o *office) odt() ([]Page, error) {
	var t textBuf
	depth := 0 // inside <text:p> or <text:h>, nested
	err := o.walk("content.xml", func(tok xml.Token) {
		switch e := tok.(type) {
		case xml.StartElement:
			switch e.Name.Local {
			case "p", "h":
				depth++
			case "s":
				t.str(" ")
			case "tab":
				t.str("\t")
			case "line-break":
				t.str("\n")
			}
		case xml.EndElement:
			if e.Name.Local == "p" || e.Name.Local == "h" {
				depth--
				t.line()
			}
		case xml.CharData:
			if depth > 0 {
				t.str(string(e))
			}
		}
	})
	return []Page{{N: 1, Text: t.take()}}, err
}
