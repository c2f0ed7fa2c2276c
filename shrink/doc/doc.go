// Package doc reads documents: PDF, .docx, .xlsx, .pptx and .odt bytes in; text per page, page
// images and facts (format, page count, text layer, why it cannot be read) out. It is pure: it
// writes no files, prints nothing and keeps no state but a lazily built PDF engine per process.
//
// A hostile or broken document never panics and never makes the reader hold more than Limits
// allow: it gives Info.Reason, one line saying why the document cannot be read
// (docs/resolve.md, "Documents").
package doc

import (
	"context"
	"fmt"
	"image"
	"io"
	"strings"
	"time"
)

// Limits bound the work on one document.
type Limits struct {
	MaxMemory     int64         // bytes the decoder may hold in total (wasm linear memory + buffers); 0 = DefaultLimits
	Timeout       time.Duration // for one call on one document
	MaxPages      int           // a PDF with more pages goes by path with a reason
	MaxPageInches float64       // a page larger than this on either side is not rendered (reason)
	MaxUnzipped   int64         // OOXML: total uncompressed bytes read from the zip (zip-bomb bound)
}

// DefaultLimits are used for every zero field of a Limits.
var DefaultLimits = Limits{
	MaxMemory:     256 << 20,
	Timeout:       20 * time.Second,
	MaxPages:      2000,
	MaxPageInches: 100,
	MaxUnzipped:   32 << 20,
}

// Info are the facts about one document.
type Info struct {
	Format    string // "pdf", "docx", "xlsx", "pptx", "odt"
	Pages     int    // PDF pages, pptx slides, xlsx sheets, docx 1 (or page breaks if cheap)
	TextLayer bool   // there is text to extract (PDF: some page has a text layer)
	Reason    string // non-empty: one line why the document cannot be read (encrypted, damaged, too many pages, zip bomb, time limit...)
}

// Page is the text of one page, slide or sheet.
type Page struct {
	N    int // 1-based page/slide/sheet number
	Text string
}

// orDefault fills the zero fields of lim from DefaultLimits.
func (lim Limits) orDefault() Limits {
	d := DefaultLimits
	if lim.MaxMemory > 0 {
		d.MaxMemory = lim.MaxMemory
	}
	if lim.Timeout > 0 {
		d.Timeout = lim.Timeout
	}
	if lim.MaxPages > 0 {
		d.MaxPages = lim.MaxPages
	}
	if lim.MaxPageInches > 0 {
		d.MaxPageInches = lim.MaxPageInches
	}
	if lim.MaxUnzipped > 0 {
		d.MaxUnzipped = lim.MaxUnzipped
	}
	return d
}

// formats are the MIME types read, as sniff names them.
var formats = map[string]string{
	"application/pdf": "pdf",
	"application/vnd.openxmlformats-officedocument.wordprocessingml.document":   "docx",
	"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet":         "xlsx",
	"application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
	"application/vnd.oasis.opendocument.text":                                   "odt",
}

// FormatOf gives the format name of a MIME type (parameters ignored), "" for what is not a
// document this package reads.
func FormatOf(mime string) string {
	mime, _, _ = strings.Cut(mime, ";")
	return formats[strings.ToLower(strings.TrimSpace(mime))]
}

// Inspect gives the facts of a document: its page count, whether it has text, and the reason
// when it cannot be read. For a PDF it looks for a text layer in the first pages only (a scan
// has none on any).
func Inspect(ctx context.Context, r io.ReaderAt, size int64, format string, lim Limits) Info {
	switch format {
	case "pdf":
		return inspectPDF(ctx, r, size, lim)
	case "docx", "xlsx", "pptx", "odt":
		_, info := textOOXML(ctx, r, size, format, lim)
		return info
	}
	return Info{Format: format, Reason: fmt.Sprintf("not a document format read here (%q)", format)}
}

// Text gives the text of each page, slide or sheet of a document, in order, and its facts.
// When Info.Reason is set there are no pages. The text held is bounded by the limits: when a
// PDF's text passes them, the pages stop early (fewer pages than Info.Pages).
func Text(ctx context.Context, r io.ReaderAt, size int64, format string, lim Limits) ([]Page, Info) {
	switch format {
	case "pdf":
		return textPDF(ctx, r, size, lim)
	case "docx", "xlsx", "pptx", "odt":
		return textOOXML(ctx, r, size, format, lim)
	}
	return nil, Info{Format: format, Reason: fmt.Sprintf("not a document format read here (%q)", format)}
}

// Render draws 1-based page of a PDF so that its longer edge is maxLongEdge pixels, on white.
// The error says in one line why the page was not drawn.
func Render(ctx context.Context, r io.ReaderAt, size int64, page int, maxLongEdge int, lim Limits) (image.Image, error) {
	return renderPDF(ctx, r, size, page, maxLongEdge, lim)
}
