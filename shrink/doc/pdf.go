package doc

import (
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"runtime"
	"strings"
	"sync"

	"github.com/attachctl/attachctl/shrink/internal/wasmcache"
	"github.com/klippa-app/go-pdfium"
	pdferr "github.com/klippa-app/go-pdfium/errors"
	"github.com/klippa-app/go-pdfium/references"
	"github.com/klippa-app/go-pdfium/requests"
	"github.com/klippa-app/go-pdfium/webassembly"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// pdfium runs as WebAssembly in wazero: no cgo, the same library on every platform. Its
// linear memory is what the library may hold; Go holds the text read and one page's pixels.
// wasmShare is the part of Limits.MaxMemory given to the linear memory, the rest to Go.
const wasmShare = 3 // quarters

// pdfiumMinPages is the linear memory pdfium.wasm starts with (its memory section's minimum, 64
// KiB pages): a limit below it cannot even instantiate the module.
const pdfiumMinPages = 289

// textLayerChars is how many non-blank characters one page must have for the document to count
// as having a text layer: less is a scan's stray marks, a page number, a stamp.
const textLayerChars = 16

// textLayerScan is how many pages Inspect looks at for a text layer: a document whose first
// pages have none is taken for a scan.
const textLayerScan = 50

// engines are the pdfium pools of the process, one per memory limit (wazero sets the limit per
// runtime); a process uses one limit in practice. Their machine code is shared through
// wasmcache, on disk between processes.
var engines struct {
	sync.Mutex
	m map[uint32]*engine
}

type engine struct {
	ready chan struct{}
	pool  pdfium.Pool
	err   error
}

// pool gives the pool whose instances hold at most pages of linear memory, starting its
// compile (or its load from the cache) on the first call; ctx only bounds the wait.
func pool(ctx context.Context, pages uint32) (pdfium.Pool, error) {
	engines.Lock()
	if engines.m == nil {
		engines.m = map[uint32]*engine{}
	}
	e := engines.m[pages]
	if e == nil {
		e = &engine{ready: make(chan struct{})}
		engines.m[pages] = e
		go func() {
			defer close(e.ready)
			cfg := wasmcache.RuntimeConfig().
				WithCoreFeatures(api.CoreFeaturesV2 | experimental.CoreFeaturesExceptionHandling).
				WithMemoryLimitPages(pages).
				WithCloseOnContextDone(true)
			e.pool, e.err = webassembly.Init(webassembly.Config{
				MaxTotal:      runtime.GOMAXPROCS(0),
				MaxIdle:       runtime.GOMAXPROCS(0),
				ReuseWorkers:  true, // see reusable
				RuntimeConfig: cfg,
				// The library sees no file system and prints nothing.
				FSConfig: wazero.NewFSConfig(),
				Stdout:   io.Discard,
				Stderr:   io.Discard,
			})
		}()
	}
	engines.Unlock()
	select {
	case <-e.ready:
		return e.pool, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Warm compiles (or loads from the cache) the PDF engine for lim now, for benchmarks and tests
// that measure documents apart from the compile.
func Warm(lim Limits) error {
	_, err := pool(context.Background(), wasmPages(lim.orDefault()))
	return err
}

func wasmPages(lim Limits) uint32 {
	return uint32(min(max(lim.MaxMemory/4*wasmShare>>16, 1), 1<<16))
}

// pdfDoc is one PDF open in one pdfium instance.
type pdfDoc struct {
	ctx      context.Context
	lim      Limits
	p        pdfium.Pdfium
	doc      references.FPDF_DOCUMENT
	pages    int
	rendered bool // the instance held a page's bitmap
}

// reusableSize is the largest PDF whose instance goes back to the pool for the next document.
// Making an instance (pdfium's memory and its start) costs far more than reading a small PDF, so
// a folder of many small PDFs would spend its time there. An instance's memory never shrinks, so
// one that read a large document, rendered a page or failed is dropped instead: an idle instance
// holds little, and one in a state pdfium did not leave cleanly is never used again.
const reusableSize = 4 << 20

// openPDF opens the PDF in an instance of its own, bounded by lim, and runs fn on it. Whatever
// goes wrong (a refused file, a time limit, a panic in the binding) comes back as a reason.
func openPDF(ctx context.Context, r io.ReaderAt, size int64, lim Limits, fn func(d *pdfDoc) string) (reason string) {
	lim = lim.orDefault()
	if wasmPages(lim) < pdfiumMinPages {
		return fmt.Sprintf("the memory limit of %d MiB is below the %d MiB pdfium needs to start",
			lim.MaxMemory>>20, (pdfiumMinPages<<16*4/wasmShare+1<<20-1)>>20)
	}
	// The first call of a process waits for the compile (or the cache load), apart from the
	// document's own time limit.
	pl, err := pool(ctx, wasmPages(lim))
	if err != nil {
		return pdfReason(ctx, lim, err)
	}
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	inst, err := pl.GetInstanceWithContext(ctx)
	if err != nil {
		return pdfReason(ctx, lim, err)
	}
	// At the time limit the instance is killed: wazero stops the running call
	// (WithCloseOnContextDone) and the call returns an error.
	killed := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		inst.Kill()
		close(killed)
	})
	var d *pdfDoc
	defer func() {
		switch {
		case !stop():
			<-killed
		case reason == "" && size <= reusableSize && d != nil && !d.rendered:
			inst.Close() // back to the pool
		default:
			inst.Kill()
		}
	}()
	defer func() {
		if v := recover(); v != nil {
			reason = pdfReason(ctx, lim, fmt.Errorf("%v", v))
		}
	}()
	if size <= 0 {
		return "damaged: an empty file"
	}
	res, err := inst.FPDF_LoadCustomDocument(&requests.FPDF_LoadCustomDocument{Reader: io.NewSectionReader(r, 0, size), Size: size})
	if err != nil {
		return pdfReason(ctx, lim, err)
	}
	defer inst.FPDF_CloseDocument(&requests.FPDF_CloseDocument{Document: res.Document})
	n, err := inst.FPDF_GetPageCount(&requests.FPDF_GetPageCount{Document: res.Document})
	if err != nil {
		return pdfReason(ctx, lim, err)
	}
	switch {
	case n.PageCount <= 0:
		return "damaged: no pages"
	case n.PageCount > lim.MaxPages:
		return fmt.Sprintf("%d pages, over the limit of %d", n.PageCount, lim.MaxPages)
	}
	d = &pdfDoc{ctx: ctx, lim: lim, p: inst, doc: res.Document, pages: n.PageCount}
	return fn(d)
}

// pdfReason says in one line why pdfium could not go on.
func pdfReason(ctx context.Context, lim Limits, err error) string {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Sprintf("reading it took longer than the limit of %s", lim.Timeout)
	case ctx.Err() != nil:
		return "stopped: " + ctx.Err().Error()
	case errors.Is(err, pdferr.ErrPassword):
		return "encrypted: it needs a password"
	case errors.Is(err, pdferr.ErrSecurity):
		return "encrypted with a scheme pdfium does not know"
	case errors.Is(err, pdferr.ErrFormat), errors.Is(err, pdferr.ErrFile):
		return "damaged: not a PDF pdfium can read"
	}
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return fmt.Sprintf("damaged, or needs more than its %d MiB of memory (pdfium: %s)", lim.MaxMemory>>20, msg)
}

// size gives a page's width and height in inches.
func (d *pdfDoc) size(i int) (w, h float64, err error) {
	s, err := d.p.FPDF_GetPageSizeByIndexF(&requests.FPDF_GetPageSizeByIndexF{Document: d.doc, Index: i})
	if err != nil {
		return 0, 0, err
	}
	return float64(s.Size.Width) / 72, float64(s.Size.Height) / 72, nil
}

// checkSizes gives the reason when a page is larger than the limit on either side.
func (d *pdfDoc) checkSizes() string {
	for i := range d.pages {
		w, h, err := d.size(i)
		if err != nil {
			return pdfReason(d.ctx, d.lim, err)
		}
		if w > d.lim.MaxPageInches || h > d.lim.MaxPageInches {
			return fmt.Sprintf("page %d is %.0fx%.0f inches, over the limit of %.0f", i+1, w, h, d.lim.MaxPageInches)
		}
	}
	return ""
}

// text reads the text layer of page i (0-based), at most max bytes of it.
func (d *pdfDoc) text(i int, max int) (string, error) {
	pg, err := d.p.FPDF_LoadPage(&requests.FPDF_LoadPage{Document: d.doc, Index: i})
	if err != nil {
		return "", err
	}
	defer d.p.FPDF_ClosePage(&requests.FPDF_ClosePage{Page: pg.Page})
	tp, err := d.p.FPDFText_LoadPage(&requests.FPDFText_LoadPage{Page: requests.Page{ByReference: &pg.Page}})
	if err != nil {
		return "", err
	}
	defer d.p.FPDFText_ClosePage(&requests.FPDFText_ClosePage{TextPage: tp.TextPage})
	n, err := d.p.FPDFText_CountChars(&requests.FPDFText_CountChars{TextPage: tp.TextPage})
	if err != nil || n.Count <= 0 {
		return "", err
	}
	// A character takes at most 3 bytes of UTF-8 (pdfium gives UTF-16 code units).
	count := min(n.Count, max/3+1)
	t, err := d.p.FPDFText_GetText(&requests.FPDFText_GetText{TextPage: tp.TextPage, Count: count})
	if err != nil {
		return "", err
	}
	return cleanText(t.Text), nil
}

// cleanText turns pdfium's line ends into newlines and drops the NULs it may leave.
func cleanText(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	s = strings.ReplaceAll(s, "\x00", "")
	return strings.TrimSpace(s)
}

func nonBlank(s string) int {
	n := 0
	for _, c := range s {
		if c > ' ' {
			n++
		}
	}
	return n
}

func inspectPDF(ctx context.Context, r io.ReaderAt, size int64, lim Limits) Info {
	info := Info{Format: "pdf"}
	info.Reason = openPDF(ctx, r, size, lim, func(d *pdfDoc) string {
		info.Pages = d.pages
		if why := d.checkSizes(); why != "" {
			return why
		}
		for i := range min(d.pages, textLayerScan) {
			t, err := d.text(i, 1<<20)
			if err != nil {
				return pdfReason(d.ctx, d.lim, err)
			}
			if nonBlank(t) >= textLayerChars {
				info.TextLayer = true
				break
			}
		}
		return ""
	})
	return info
}

func textPDF(ctx context.Context, r io.ReaderAt, size int64, lim Limits) ([]Page, Info) {
	info := Info{Format: "pdf"}
	var pages []Page
	info.Reason = openPDF(ctx, r, size, lim, func(d *pdfDoc) string {
		info.Pages = d.pages
		if why := d.checkSizes(); why != "" {
			return why
		}
		left := int(textBudget(d.lim))
		for i := range d.pages {
			t, err := d.text(i, left)
			if err != nil {
				return pdfReason(d.ctx, d.lim, err)
			}
			if len(t) > left {
				break // the text past the budget is not read: the pages returned stop here
			}
			left -= len(t)
			if nonBlank(t) >= textLayerChars {
				info.TextLayer = true
			}
			pages = append(pages, Page{N: i + 1, Text: t})
		}
		return ""
	})
	if info.Reason != "" {
		pages = nil
	}
	return pages, info
}

// textBudget is how many bytes of text one call may return: Go's share of the memory limit.
func textBudget(lim Limits) int64 { return lim.MaxMemory / 4 * (4 - wasmShare) }

func renderPDF(ctx context.Context, r io.ReaderAt, size int64, page, maxLongEdge int, lim Limits) (image.Image, error) {
	lim = lim.orDefault()
	if maxLongEdge <= 0 {
		return nil, errors.New("doc: no pixel size to render at")
	}
	// The page's pixels are held twice, in pdfium's bitmap and in Go's copy.
	if need := int64(maxLongEdge) * int64(maxLongEdge) * 4; need > textBudget(lim) {
		return nil, fmt.Errorf("doc: a %d px page needs %d MiB, over the memory limit", maxLongEdge, need>>20)
	}
	var img *image.RGBA
	why := openPDF(ctx, r, size, lim, func(d *pdfDoc) string {
		if page < 1 || page > d.pages {
			return fmt.Sprintf("no page %d: it has %d", page, d.pages)
		}
		w, h, err := d.size(page - 1)
		if err != nil {
			return pdfReason(d.ctx, d.lim, err)
		}
		if w > d.lim.MaxPageInches || h > d.lim.MaxPageInches {
			return fmt.Sprintf("page %d is %.0fx%.0f inches, over the limit of %.0f", page, w, h, d.lim.MaxPageInches)
		}
		d.rendered = true
		res, err := d.p.RenderPageInPixels(&requests.RenderPageInPixels{
			Page:  requests.Page{ByIndex: &requests.PageByIndex{Document: d.doc, Index: page - 1}},
			Width: maxLongEdge, Height: maxLongEdge,
		})
		if err != nil {
			return pdfReason(d.ctx, d.lim, err)
		}
		defer res.Cleanup()
		src := res.Result.Image
		if src == nil {
			return "pdfium rendered nothing"
		}
		// The pixels are a view of pdfium's memory, gone when the instance closes.
		img = &image.RGBA{Pix: append([]byte(nil), src.Pix...), Stride: src.Stride, Rect: src.Rect}
		return ""
	})
	if why != "" {
		return nil, errors.New(why)
	}
	return img, nil
}

// SetCodeCache sets the folder where pdfium's compiled code is kept between processes (shared
// with shrink's HEIC and AVIF decoders); "" means attachctl/wasm in the user's cache folder, the
// default. The first folder set in a process is the one used.
func SetCodeCache(dir string) { wasmcache.SetDir(dir) }
