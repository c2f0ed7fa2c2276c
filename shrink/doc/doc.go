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
	"errors"
	"image"
	"io"
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
	MaxPageInches: 200,
	MaxUnzipped:   64 << 20,
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

var errNotBuilt = errors.New("doc: not built yet")

// FormatOf gives the format name of a MIME type, "" for what is not a document this package reads.
func FormatOf(mime string) string { return "" }

// Inspect gives the facts of a document without extracting its text.
func Inspect(ctx context.Context, r io.ReaderAt, size int64, format string, lim Limits) Info {
	return Info{Format: format, Reason: errNotBuilt.Error()}
}

// Text gives the text of each page of a document, in order, and its facts.
func Text(ctx context.Context, r io.ReaderAt, size int64, format string, lim Limits) ([]Page, Info) {
	return nil, Info{Format: format, Reason: errNotBuilt.Error()}
}

// Render draws 1-based page of a PDF so that its longer edge is maxLongEdge pixels.
func Render(ctx context.Context, r io.ReaderAt, size int64, page int, maxLongEdge int, lim Limits) (image.Image, error) {
	return nil, errNotBuilt
}
