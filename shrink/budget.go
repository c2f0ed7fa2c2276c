package shrink

import (
	"context"
	"encoding/binary"
	"image"
	"sync"

	"github.com/attachctl/attachctl/shrink/internal/heif"
	"golang.org/x/sync/semaphore"
)

// DefaultMaxMemory is the default budget of memory for decodes running at once (docs/commands.md,
// "shrink").
const DefaultMaxMemory = 1 << 30

// budgets are the shared semaphores, one per budget size in use: every Record with the same
// MaxMemory draws on the same one, so a pool of workers stays under it together.
var budgets struct {
	sync.Mutex
	m map[int64]*semaphore.Weighted
}

func budget(max int64) *semaphore.Weighted {
	budgets.Lock()
	defer budgets.Unlock()
	if budgets.m == nil {
		budgets.m = map[int64]*semaphore.Weighted{}
	}
	s := budgets.m[max]
	if s == nil {
		s = semaphore.NewWeighted(max)
		budgets.m[max] = s
	}
	return s
}

// reserve waits until n bytes of the budget are free and takes them; the returned function
// gives them back.
func reserve(max, n int64) func() {
	s := budget(max)
	s.Acquire(context.Background(), n) // cannot fail: n <= max and the context never ends
	reserved.Note(n)
	return func() {
		reserved.Note(-n)
		s.Release(n)
	}
}

// grower is a decode's growth past its reservation, taken from the same budget as it happens
// and never waited for: two decodes that each wait for the other's bytes would wait forever. A
// growth refused ends the decode (heif.ErrBudget), which then starts again with its whole worst
// case reserved up front (reserve).
type grower struct {
	s     *semaphore.Weighted
	taken int64
}

func newGrower(max int64) *grower { return &grower{s: budget(max)} }

func (g *grower) grow(n int64) bool {
	if !g.s.TryAcquire(n) {
		return false
	}
	g.taken += n
	reserved.Note(n)
	return true
}

// release gives back what the growth took.
func (g *grower) release() {
	if g.taken > 0 {
		reserved.Note(-g.taken)
		g.s.Release(g.taken)
		g.taken = 0
	}
}

// reserved counts the bytes reserved now and the most ever reserved at once, for the tests.
var reserved heif.Tally

// decodeNeed is the memory a decode and re-encode of the image holds at its peak, from its
// header alone: the decoder's output at its own pixel layout, what the decoder keeps beside it
// (a progressive JPEG's coefficients, the WebAssembly decoders' memory), the source bytes, and
// the downscaled image with the encoder's buffer. It errs on the high side.
func decodeNeed(format string, cfg image.Config, data []byte, shift, dw, dh int, maxBytes int64) int64 {
	px := int64(cfg.Width) * int64(cfg.Height)
	var n int64
	switch format {
	case "jpeg":
		n = jpegNeed(data, px, shift)
	case "png":
		n = px * int64(pngBytesPerPixel(data))
	case "gif":
		n = 2 * px // the frame, and the composited frame
	case "heic":
		n = reserveFor(format, cfg, data) + px*heicCopyPerPixel
	case "avif":
		n = reserveFor(format, cfg, data) + px*avifCopyPerPixel
	default: // WebP, BMP, TIFF: at most 16-bit RGBA
		n = 8 * px
	}
	out := int64(max(dw, 1)) * int64(max(dh, 1))
	return n + int64(len(data)) + 8*out + 2*maxBytes
}

// wasmLimit is the most a HEIC or AVIF decode's WebAssembly decoder may use: the module's memory
// is not let grow past it, so an image larger than its header says stops there (asis) instead of
// taking memory the budget gave to other decodes.
func wasmLimit(format string, cfg image.Config, data []byte) int64 {
	return wasmBytes(format, cfg, data, heicWasmPerPixel, avifWasmPerPixel, wasmBase)
}

// reserveFor is wasmReserve; a test makes it smaller to see a decode grow.
var reserveFor = wasmReserve

// wasmReserve is the part of a HEIC or AVIF decode's reservation set aside for its WebAssembly
// decoder before it starts: what the commonest layout (8-bit 4:2:0, no alpha, a camera's photo)
// takes. A layout that needs more (deeper samples, 4:4:4, alpha, tiles) takes the rest from the
// budget as its memory grows, up to wasmLimit (grower).
func wasmReserve(format string, cfg image.Config, data []byte) int64 {
	return wasmBytes(format, cfg, data, heicReservePerPixel, avifReservePerPixel, wasmReserveBase)
}

// wasmBytes is base, the file's size, and heic or avif bytes for each pixel of the header.
func wasmBytes(format string, cfg image.Config, data []byte, heic, avif, base int64) int64 {
	per := heic
	if format == "avif" {
		per = avif
	}
	return int64(cfg.Width)*int64(cfg.Height)*per + base + int64(len(data))
}

// The WebAssembly decoders' memory, measured on 12 MP images of every layout they take (see
// docs/commands.md, "shrink"): a base for the module's own memory; bytes a pixel at most, for
// libheif's planes and tiles (an image with alpha is the most: RGBA out of YCbCr and alpha planes)
// or for libavif's YUV, its frame buffers and RGBA (12-bit 4:4:4 with alpha is the most); besides
// the copy of the file. The reservation's share is what an 8-bit 4:2:0 image measured, with a
// margin (TestReservationAccounting holds the two together). Outside the module, the copy of its
// output: at most RGBA, 16-bit for a deep AVIF.
const (
	wasmBase            = 32 << 20
	heicWasmPerPixel    = 20
	avifWasmPerPixel    = 50
	wasmReserveBase     = 16 << 20
	heicReservePerPixel = 8
	avifReservePerPixel = 24
	heicCopyPerPixel    = 4
	avifCopyPerPixel    = 8
)

// jpegNeed is what internal/jpeg allocates for a JPEG of px pixels decoded at 1/2^shift: its
// component planes (at MCU size, a 2^shift-th of it each way), and for a progressive JPEG every
// coefficient of every block (4 bytes each, at any shift) too; a four-component (CMYK) image is
// decoded at full size and converted into a second image as large.
func jpegNeed(d []byte, px int64, shift int) int64 {
	sof, progressive := jpegSOF(d)
	if len(sof) < 6 || int(sof[5])*3+6 > len(sof) {
		return 8 * px // no SOF seen: as much as CMYK would take
	}
	h, w := int64(binary.BigEndian.Uint16(sof[1:])), int64(binary.BigEndian.Uint16(sof[3:]))
	nc := int(sof[5])
	hmax, vmax := int64(1), int64(1)
	for i := range nc {
		hv := sof[6+3*i+1]
		hmax, vmax = max(hmax, int64(hv>>4)), max(vmax, int64(hv&15))
	}
	mcusX, mcusY := (w+8*hmax-1)/(8*hmax), (h+8*vmax-1)/(8*vmax)
	var samples int64
	for i := range nc {
		hv := sof[6+3*i+1]
		if nc == 1 { // a lone component is not interleaved: blocks cover the image only
			samples += (w + 7) / 8 * 8 * ((h + 7) / 8 * 8)
			break
		}
		samples += mcusX * int64(hv>>4) * 8 * mcusY * int64(hv&15) * 8
	}
	n := samples >> (2 * shift)
	if nc == 4 {
		n = samples + 4*px
	}
	if progressive {
		n += 4 * samples
	}
	return n
}

// reduceShift is the largest shift (up to 3, an eighth) at which a w x h JPEG decoded at
// 1/2^shift is still at least dw x dh, so that area averaging does the rest of the scale. An
// image under reduceMinPixels is decoded whole: it is cheap, and on a small detailed picture the
// groups the reduced path takes as uniform are a visible share of an output pixel.
func reduceShift(w, h, dw, dh int) int {
	if int64(w)*int64(h) < reduceMinPixels {
		return 0
	}
	s := 0
	for s < 3 && ceilShift(w, s+1) >= dw && ceilShift(h, s+1) >= dh {
		s++
	}
	return s
}

const reduceMinPixels = 1 << 20

// ceilShift is n / 2^s rounded up.
func ceilShift(n, s int) int { return (n + 1<<s - 1) >> s }

// jpegSOF returns the payload of a JPEG's frame header, and whether the frame is progressive.
func jpegSOF(d []byte) (sof []byte, progressive bool) {
	jpegSegments(d, func(m byte, p []byte) bool {
		if m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc {
			sof, progressive = p, m == 0xc2 || m == 0xc6 || m == 0xca || m == 0xce
			return false
		}
		return true
	})
	return sof, progressive
}

// jpegSegments walks a JPEG's marker segments from SOI, calling f with each marker and payload
// until f returns false; complete is whether the walk reached the first SOS (or EOI) within d.
func jpegSegments(d []byte, f func(marker byte, payload []byte) bool) (complete bool) {
	for i := 2; i+4 <= len(d); {
		if d[i] != 0xff {
			return false
		}
		m := d[i+1]
		if m == 0xff || m == 0x01 || m >= 0xd0 && m <= 0xd8 {
			i++
			continue
		}
		if m == 0xda || m == 0xd9 {
			return true
		}
		n := int(binary.BigEndian.Uint16(d[i+2:]))
		if n < 2 || i+2+n > len(d) || !f(m, d[i+4:i+2+n]) {
			return false
		}
		i += 2 + n
	}
	return false
}

// pngBytesPerPixel is what image/png's decoded image takes a pixel for this IHDR (twice for an
// interlaced PNG, whose passes are decoded apart and then merged).
func pngBytesPerPixel(d []byte) int {
	c := pngChunk(d, "IHDR")
	if len(c) < 13 {
		return 8
	}
	depth, ctype, interlace := c[8], c[9], c[12]
	n := 4 // truecolour, grey with alpha, truecolour with alpha: RGBA or NRGBA
	switch ctype {
	case 0, 3: // grey, palette
		n = 1
	}
	if depth == 16 {
		n *= 2
	}
	if interlace != 0 {
		n *= 2
	}
	return n
}
