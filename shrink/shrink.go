// Package shrink makes images fit what models accept (docs/commands.md, "shrink"): long edge at
// most Options.MaxEdge, encoded size at most Options.MaxBytes. An image within both limits passes
// through byte for byte ("kept"); one over them is decoded, turned upright by its EXIF orientation,
// downscaled by area averaging and re-encoded without EXIF, as PNG when flat or transparent and as
// JPEG when photo-like ("resized" or "reencoded"); one that cannot or must not be decoded passes
// through with a reason ("asis"). BMP and TIFF, which models do not take, are converted even within
// the limits.
//
// Shrunk files are written into Options.OutDir under a name made of the source's BLAKE3 and the
// options, through a temporary file renamed into place, so a file there is always whole and a
// second run over the same input reuses it instead of encoding again.
//
// The package never prints or exits; errors carry their code (fault.Errorf; docs/errors.md).
package shrink

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"

	_ "image/gif" // decoders: GIF, and below BMP, TIFF and WebP

	_ "golang.org/x/image/bmp"
	_ "golang.org/x/image/tiff"
	_ "golang.org/x/image/webp"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/shrink/internal/heif"
	fastjpeg "github.com/attachctl/attachctl/shrink/internal/jpeg"
	"github.com/attachctl/attachctl/shrink/internal/wasmcache"
	"github.com/attachctl/attachctl/sniff"
	"github.com/zeebo/blake3"
)

// Options are the limits of docs/commands.md ("shrink") and where shrunk files go. Zero values take
// the defaults.
type Options struct {
	MaxEdge   int   // longest edge in pixels after shrinking; default 2000
	MaxBytes  int64 // largest encoded size in bytes; default 500000
	MaxPixels int64 // images with more pixels (from the header) are not decoded; default 50,000,000
	// MaxMemory bounds the memory of the decodes running at once, in bytes; default 1 GiB.
	// Every decode first reserves what its header says it will need from a budget shared by
	// all Record calls with the same MaxMemory, and waits until that much is free; an image
	// that needs more than all of it is not decoded (asis).
	MaxMemory int64
	OutDir    string // folder for shrunk files, created 0700 when needed
	// CodeCache is the folder where the HEIC and AVIF decoders' compiled code is kept between
	// runs; empty means attachctl/wasm in the user's cache folder (os.UserCacheDir). Only the
	// first HEIC or AVIF decode of a process reads it.
	CodeCache string
}

// Defaults of docs/commands.md ("shrink").
const (
	DefaultMaxEdge   = 2000
	DefaultMaxBytes  = 500_000
	DefaultMaxPixels = 50_000_000
)

// Actions of the "shrink" object.
const (
	Kept      = "kept"      // within the limits: bytes untouched, path unchanged
	Resized   = "resized"   // decoded, downscaled (and oriented), re-encoded
	Reencoded = "reencoded" // decoded and re-encoded at its (oriented) size
	AsIs      = "asis"      // not decoded, passed on untouched; the reason says why
)

// version names the algorithm in cache file names; change it when output for the same input
// and options would change, so old results are not reused.
const version = "s3"

// JPEG qualities tried in turn until the file fits MaxBytes, then the size goes down.
var jpegLadder = []int{85, 75, 65, 55, 45}

// pngLevel is the zlib effort for PNG: BestSpeed is several times faster than the default and
// costs a few percent of size on flat images.
const pngLevel = png.BestSpeed

// PNG for a flat image: an image of at most 256 colours goes on an exact palette (lossless and
// smaller); else truecolour first and, if over MaxBytes, a quantized palette of 256 colours (see
// quantize); if still over, a smaller size. Truecolour is not tried when an estimate from an eighth
// of the rows is already over MaxBytes by a quarter (see truecolourEstimate). pngMinEdge: a PNG that does not fit MaxBytes is shrunk in steps; once its long edge would fall
// below this, an opaque image goes JPEG instead (the documented last resort). An image with alpha
// keeps shrinking as PNG until it fits.
const pngMinEdge = 1000

func (o Options) withDefaults() Options {
	if o.MaxEdge <= 0 {
		o.MaxEdge = DefaultMaxEdge
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxPixels <= 0 {
		o.MaxPixels = DefaultMaxPixels
	}
	if o.MaxMemory <= 0 {
		o.MaxMemory = DefaultMaxMemory
	}
	return o
}

// readLimit is the largest file read into memory to decode: no image within MaxPixels needs
// more than 8 bytes a pixel, even uncompressed 16-bit RGBA.
func (o Options) readLimit() int64 { return 8*o.MaxPixels + 1<<20 }

// Record shrinks the image a record stands for and sets rec.Shrink. Records that are not of kind
// image, and records that carry an error, are left untouched (no "shrink" object). When it writes
// a new file it sets path, name (the original base name with the new extension), size, mime,
// blake3, width and height to the new file's, clears orientation, and keeps the original in
// shrink.from. A source that is missing, unreadable or no longer what the record says (its BLAKE3,
// or its size when the record has no BLAKE3) is an error with code file.missing, file.unreadable,
// file.notRegular or file.changed; a file that cannot be decoded is not an error but "asis".
func Record(rec *manifest.Record, opts Options) error {
	if rec.Failed() || rec.Kind != manifest.KindImage {
		return nil
	}
	opts = opts.withDefaults()
	if rec.Blake3 == "" {
		// Nothing to check the bytes against (a head-only sniff, as prepare does): an image that
		// its header and size show to be kept is not read whole; the upload's pass hashes it.
		if kept, err := keptByHead(rec, opts); kept || err != nil {
			return err
		}
	}
	src, err := load(rec.Path, opts.readLimit())
	if err != nil {
		return err
	}
	defer src.release()
	if rec.Blake3 != "" && !strings.EqualFold(rec.Blake3, src.sum) {
		return fault.Errorf(fault.FileChanged, "%s: changed since it was sniffed: BLAKE3 is now %s, the record says %s", rec.Path, src.sum, rec.Blake3)
	}
	if rec.Blake3 == "" && rec.HasSize && rec.Size != src.size {
		return fault.Errorf(fault.FileChanged, "%s: changed since it was sniffed: %d bytes, the record says %d", rec.Path, src.size, rec.Size)
	}
	if rec.Blake3 == "" {
		rec.Blake3 = src.sum
	}
	asis := func(format string, args ...any) error {
		// One line, whatever a decoder's error carried after its first.
		why, _, _ := strings.Cut(fmt.Sprintf(format, args...), "\n")
		rec.Shrink = &manifest.Shrink{Action: AsIs, Reason: why}
		return nil
	}

	hp, isHEIF := heifHeader(src.head)
	cfg, format, err := image.DecodeConfig(bytes.NewReader(src.head))
	if isHEIF {
		cfg, format, err = image.Config{Width: hp.Width, Height: hp.Height}, hp.format, nil
		if hp.Width <= 0 || hp.Height <= 0 {
			return asis("undecodable: %s container with no size for its primary image", strings.ToUpper(format))
		}
	}
	switch {
	case errors.Is(err, image.ErrFormat):
		what := rec.Mime
		if what == "" {
			what = "this format"
		}
		return asis("no decoder for %s", what)
	case err != nil:
		return asis("undecodable: %s: %v", format, err)
	case cfg.Width <= 0 || cfg.Height <= 0:
		return asis("undecodable: %s of %dx%d pixels", format, cfg.Width, cfg.Height)
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px > opts.MaxPixels {
		return asis("%dx%d is %d pixels, over --max-pixels %d; not decoded", cfg.Width, cfg.Height, px, opts.MaxPixels)
	}
	if src.data == nil {
		return asis("%d bytes is more than an image within --max-pixels needs; not decoded", src.size)
	}
	if animated(format, src.data) || isHEIF && hp.sequence {
		return asis("animated %s", strings.ToUpper(format))
	}

	col := profileOf(format, src.data, hp)
	why := reasons(format, cfg, src.size, opts)
	if col.conv != nil {
		why = append(why, fmt.Sprintf("colour profile %q is not sRGB", col.name))
	}
	if len(why) == 0 {
		rec.Shrink = &manifest.Shrink{Action: Kept, Reason: "within limits"}
		return nil
	}
	if opts.OutDir == "" {
		return fault.Errorf(fault.FileUnreadable, "%s: no folder for shrunk files (--out)", rec.Path)
	}

	o := rec.Orientation
	if isHEIF {
		o = hp.Orientation // irot and imir; a HEIF file's EXIF orientation is not to be applied
	} else if o < 1 || o > 8 {
		_, _, o = sniff.Image(src.data) // a record made without sniff: read it from the bytes
	}
	ow, oh := cfg.Width, cfg.Height
	if swapsAxes(o) {
		ow, oh = oh, ow
	}
	dw, dh := fit(ow, oh, opts.MaxEdge)
	from := &manifest.From{Path: rec.Path, Name: rec.Name, Size: src.size, Mime: rec.Mime,
		Blake3: src.sum, Width: cfg.Width, Height: cfg.Height}
	if from.Name == "" {
		from.Name = filepath.Base(rec.Path)
	}
	if from.Mime == "" {
		from.Mime = "image/" + format
	}

	stem := filepath.Join(opts.OutDir, fmt.Sprintf("%s.e%d.b%d.%s", src.sum, opts.MaxEdge, opts.MaxBytes, version))
	var out result
	if r, ok := reuse(stem, opts.MaxBytes); ok {
		out = r
	} else {
		shift := 0 // a JPEG is decoded at 1/2^shift of its size when the output is that small
		if format == "jpeg" {
			rw, rh := dw, dh
			if swapsAxes(o) {
				rw, rh = dh, dw
			}
			shift = reduceShift(cfg.Width, cfg.Height, rw, rh)
		}
		need := decodeNeed(format, cfg, src.data, shift, dw, dh, opts.MaxBytes)
		if need > opts.MaxMemory {
			return asis("%dx%d %s needs about %d MiB to decode, over --max-memory %d; not decoded",
				cfg.Width, cfg.Height, strings.ToUpper(format), need>>20, opts.MaxMemory)
		}
		release := reserve(opts.MaxMemory, need)
		defer func() { release() }()
		if isHEIF {
			setCodeCache(opts.CodeCache)
		}
		lim := heif.Limit{Max: wasmLimit(format, cfg, src.data), Reserved: reserveFor(format, cfg, src.data)}
		g := newGrower(opts.MaxMemory)
		lim.Grow = g.grow
		img, shift, err := decode(src.data, format, shift, lim)
		g.release()
		if errors.Is(err, heif.ErrBudget) {
			// A layout that needs more than the commonest, met when the budget had no room for
			// its growth: decoded again with its worst case reserved, waited for as any other.
			release()
			need += lim.Max - lim.Reserved
			if need > opts.MaxMemory {
				release = func() {}
				return asis("%dx%d %s needs about %d MiB to decode, over --max-memory %d; not decoded",
					cfg.Width, cfg.Height, strings.ToUpper(format), need>>20, opts.MaxMemory)
			}
			release = reserve(opts.MaxMemory, need)
			img, shift, err = decode(src.data, format, shift, heif.Limit{Max: lim.Max})
		}
		var me *heif.MemoryError
		switch {
		case errors.As(err, &me):
			return asis("%s header says %dx%d, but its decoder needed more than the %d MiB that size allows; not decoded",
				strings.ToUpper(format), cfg.Width, cfg.Height, me.Limit>>20)
		case err != nil:
			return asis("undecodable: %s: %v", format, err)
		}
		b := img.Bounds()
		switch {
		case format == "heic":
			// libheif has turned (and maybe cropped) it already: it is as displayed.
			o = 1
			if b.Dx() != ow || b.Dy() != oh {
				ow, oh = b.Dx(), b.Dy()
				dw, dh = fit(ow, oh, opts.MaxEdge)
			}
		case b.Dx() != ceilShift(cfg.Width, shift) || b.Dy() != ceilShift(cfg.Height, shift):
			return asis("undecodable: %s header says %dx%d, pixels are %dx%d", format, cfg.Width, cfg.Height, b.Dx(), b.Dy())
		case isHEIF && !hp.Crop.Empty():
			// libavif leaves the clean aperture to the reader, as it does irot and imir; it
			// comes first.
			sub, ok := img.(interface {
				SubImage(image.Rectangle) image.Image
			})
			if !ok {
				return asis("undecodable: %s decoded to %T, which cannot be cropped", format, img)
			}
			img = sub.SubImage(hp.Crop)
			ow, oh = hp.Crop.Dx(), hp.Crop.Dy()
			if swapsAxes(o) {
				ow, oh = oh, ow
			}
			dw, dh = fit(ow, oh, opts.MaxEdge)
		}
		enc, ext, w, h, ok := encode(img, o, dw, dh, opts.MaxBytes, col.conv)
		if !ok {
			return asis("cannot meet --max-bytes %d", opts.MaxBytes)
		}
		img = nil
		out = result{path: stem + ext, ext: ext, size: int64(len(enc)), width: w, height: h}
		if out.sum, err = writeAtomic(out.path, enc); err != nil {
			return fault.Errorf(fault.FileUnreadable, "%s: cannot write the shrunk file: %v", rec.Path, err)
		}
	}

	action := Reencoded
	if out.width != ow || out.height != oh {
		action = Resized
	}
	if col.err != nil {
		why = append(why, fmt.Sprintf("colour profile %q not applied: %v", col.name, col.err))
	}
	rec.Shrink = &manifest.Shrink{Action: action, Reason: strings.Join(why, "; "), From: from}
	rec.Path = out.path
	rec.Sniffed = nil // what the sniff read is the original's
	rec.Name = newName(from.Name, out.ext)
	rec.SetSize(out.size)
	rec.Mime = mimeOf(out.ext)
	rec.Blake3 = out.sum
	rec.Width, rec.Height = out.width, out.height
	rec.Orientation = 0
	return nil
}

// fit returns the size of a w x h image scaled so its long edge is at most maxEdge.
func fit(w, h, maxEdge int) (int, int) {
	long := max(w, h)
	if long <= maxEdge {
		return w, h
	}
	s := float64(maxEdge) / float64(long)
	dw := max(1, int(math.Round(float64(w)*s)))
	dh := max(1, int(math.Round(float64(h)*s)))
	if w >= h {
		dw = maxEdge
	} else {
		dh = maxEdge
	}
	return dw, dh
}

// newName is the original's base name with the new extension, held to the 255 bytes a name may have
// (docs/store.md, "Ids and names"): a base too long for the extension is cut, at a character's
// start, so the name stays valid UTF-8.
func newName(name, ext string) string {
	stem := strings.TrimSuffix(name, filepath.Ext(name))
	if n := maxNameBytes - len(ext); len(stem) > n {
		for n > 0 && !utf8.RuneStart(stem[n]) {
			n--
		}
		stem = stem[:n]
	}
	if stem == "" {
		stem = "image"
	}
	return stem + ext
}

// maxNameBytes is the longest plain name (docs/store.md).
const maxNameBytes = 255

func mimeOf(ext string) string {
	if ext == ".png" {
		return "image/png"
	}
	return "image/jpeg"
}

// source is a file read once: its BLAKE3, its size, its bytes (nil when over the read limit)
// and its head (the bytes, or the first MiB of a file too large to read).
type source struct {
	data, head []byte
	sum        string
	size       int64
	buf        *bytes.Buffer // from bufPool; data and head point into it
}

// bufPool recycles the buffers sources are read into. Most records are kept and need their bytes
// only for a moment; a fresh buffer per file costs a first touch of every page, which on a VM is
// dearer than reading the file (measured on 50 kept PNGs of 800 KiB: 234 ms of CPU before, 91 ms with the pool).
var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// release gives the source's buffer back; data and head must not be used after it.
func (s *source) release() {
	if s.buf != nil && s.buf.Cap() <= 64<<20 { // do not keep a huge one alive
		s.buf.Reset()
		bufPool.Put(s.buf)
	}
	s.buf, s.data, s.head = nil, nil, nil
}

func load(path string, limit int64) (*source, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fileError(path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fault.Errorf(fault.FileNotRegular, "%s: not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fileError(path, err)
	}
	defer f.Close()
	if fi2, err := f.Stat(); err != nil || !os.SameFile(fi, fi2) {
		return nil, fault.Errorf(fault.FileChanged, "%s: replaced while opened", path)
	}
	h := blake3.New()
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	s := &source{buf: buf}
	if fi.Size() <= limit {
		buf.Grow(int(fi.Size()) + bytes.MinRead)
		n, err := buf.ReadFrom(io.LimitReader(f, limit+1))
		if err != nil {
			s.release()
			return nil, fault.Errorf(fault.FileUnreadable, "%s: %w", path, err)
		}
		h.Write(buf.Bytes()) // one write: the hasher works a whole buffer in parallel
		s.size = n
		if n <= limit {
			s.data = buf.Bytes()
			s.head = s.data
		}
	}
	if s.data == nil { // too large: hash the rest, keep the head for the header
		if s.head = buf.Bytes(); len(s.head) == 0 {
			if _, err := io.CopyN(io.MultiWriter(buf, h), f, 1<<20); err != nil && err != io.EOF {
				s.release()
				return nil, fault.Errorf(fault.FileUnreadable, "%s: %w", path, err)
			}
			s.head = buf.Bytes()
		}
		s.head = s.head[:min(len(s.head), 1<<20)]
		n, err := io.Copy(h, f)
		if err != nil {
			s.release()
			return nil, fault.Errorf(fault.FileUnreadable, "%s: %w", path, err)
		}
		s.size = int64(buf.Len()) + n
	}
	s.sum = hex.EncodeToString(h.Sum(nil))
	return s, nil
}

func fileError(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fault.Errorf(fault.FileMissing, "%s: no such file", path)
	}
	return fault.Errorf(fault.FileUnreadable, "%s: %w", path, err)
}

// decode decodes a whole image; a decoder's panic on hostile input is an error. The HEIC and
// AVIF decoders' memory stays within wasmLimit (a *heif.MemoryError past its Max, heif.ErrBudget
// when a growth past its reservation is refused). JPEG (what
// image.Decode would also take as JPEG: data starting FF D8) goes to internal/jpeg, which
// gives image/jpeg's exact result about twice as fast, or with shift > 0 the image at 1/2^shift
// of its size, each sample the mean of those it stands for (used is the shift applied).
func decode(data []byte, format string, shift int, wasmLimit heif.Limit) (m image.Image, used int, err error) {
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("decoder failed: %v", r)
		}
	}()
	switch format {
	case "heic":
		m, err = heif.DecodeHEIC(data, wasmLimit)
		return m, 0, err
	case "avif":
		m, err = heif.DecodeAVIF(data, wasmLimit)
		return m, 0, err
	}
	if bytes.HasPrefix(data, jpegMagic) {
		if shift > 0 {
			if m, used, err = fastjpeg.DecodeReduced(bytes.NewReader(data), shift); err == nil {
				return m, used, nil
			}
			// A JPEG found to need full size only after its first scan: decode it again so.
		}
		m, err = fastjpeg.Decode(bytes.NewReader(data))
		return m, 0, err
	}
	m, _, err = image.Decode(bytes.NewReader(data))
	return m, 0, err
}

// setCodeCache gives the HEIC and AVIF decoders their cache folder before their first compile
// (the first folder given in a process is the one used).
func setCodeCache(dir string) { wasmcache.SetDir(dir) }

// jpegMagic is how image/jpeg registers itself with image.Decode.
var jpegMagic = []byte{0xff, 0xd8}

// render downscales src to dw x dh as displayed (after orientation o), turns it upright and
// converts its colour to sRGB (conv, nil when there is nothing to do).
// Area averaging commutes with flips and quarter turns, so it averages first, on the stored
// layout, and orients the small result.
func render(src image.Image, o, dw, dh int, conv *colourConv) image.Image {
	rw, rh := dw, dh
	if swapsAxes(o) {
		rw, rh = dh, dw
	}
	m := orient(resize(src, rw, rh), o)
	if conv != nil {
		m = conv.apply(m)
	}
	return m
}

// encode renders src at dw x dh and encodes it within maxBytes: PNG or JPEG by the heuristic in
// format.go, then the JPEG quality ladder, then smaller sizes. ok is false when nothing fits.
func encode(src image.Image, o, dw, dh int, maxBytes int64, conv *colourConv) (out []byte, ext string, w, h int, ok bool) {
	m := render(src, o, dw, dh, conv)
	_, ycc := src.(*image.YCbCr)
	usePNG := false
	alpha := false
	switch t := m.(type) {
	case *image.RGBA:
		alpha = hasAlpha(t)
		usePNG = alpha || (!ycc && flat(t.Pix, t.Rect.Dx(), t.Rect.Dy(), t.Stride, 4))
	case *image.Gray:
		usePNG = flat(t.Pix, t.Rect.Dx(), t.Rect.Dy(), t.Stride, 1)
	}
	var buf bytes.Buffer
	smaller := func(size int) bool { // next size down; false when already 1 x 1
		f := min(0.9, 0.9*math.Sqrt(float64(maxBytes)/float64(size)))
		nw, nh := max(1, int(float64(dw)*f)), max(1, int(float64(dh)*f))
		if nw == dw && nh == dh {
			if dw == 1 && dh == 1 {
				return false
			}
			nw, nh = max(1, dw-1), max(1, dh-1)
		}
		dw, dh = nw, nh
		m = render(src, o, dw, dh, conv)
		return true
	}
	if usePNG {
		enc := png.Encoder{CompressionLevel: pngLevel, BufferPool: pngBuffers}
		for {
			var pal *image.Paletted
			exact := false
			if rgba, ok := m.(*image.RGBA); ok && !alpha {
				pal, exact = quantize(rgba)
			}
			size := 0
			// Truecolour is skipped when its estimate says it will not fit: the attempt
			// (filtering and deflating until it passes maxBytes, half the image or more) would
			// only be thrown away. An image with alpha has no palette to fall back to.
			tryTrue := !exact && (pal == nil || truecolourEstimate(m.(*image.RGBA), enc) <= maxBytes+maxBytes/4)
			if tryTrue { // truecolour, given up as soon as it passes maxBytes
				buf.Reset()
				err := enc.Encode(&capWriter{&buf, maxBytes}, m)
				if err == nil {
					return buf.Bytes(), ".png", dw, dh, true
				}
				if !errors.Is(err, errTooBig) {
					return nil, "", 0, 0, false
				}
				size = buf.Len()
			}
			if pal != nil { // the exact palette (lossless), else the quantized one
				buf.Reset()
				if err := enc.Encode(&buf, pal); err != nil {
					return nil, "", 0, 0, false
				}
				if int64(buf.Len()) <= maxBytes {
					return buf.Bytes(), ".png", dw, dh, true
				}
				size = buf.Len()
			}
			if !alpha && float64(max(dw, dh))*0.9*math.Sqrt(float64(maxBytes)/float64(size)) < pngMinEdge {
				break // the last resort: JPEG at this size
			}
			if !smaller(size) {
				return nil, "", 0, 0, false
			}
		}
	}
	for range 40 {
		for _, q := range jpegLadder {
			buf.Reset()
			if err := jpeg.Encode(&buf, m, &jpeg.Options{Quality: q}); err != nil {
				return nil, "", 0, 0, false
			}
			if int64(buf.Len()) <= maxBytes {
				return buf.Bytes(), ".jpg", dw, dh, true
			}
		}
		if !smaller(buf.Len()) {
			break
		}
	}
	return nil, "", 0, 0, false
}

var errTooBig = errors.New("over the size limit")

// pngBuffers lends the PNG encoder its zlib writer and row buffers from one encode to the next
// (the estimate alone encodes 16 bands an image): allocating them afresh costs more than the
// encoding of a band.
var pngBuffers = &pngPool{}

type pngPool struct{ p sync.Pool }

func (p *pngPool) Get() *png.EncoderBuffer {
	b, _ := p.p.Get().(*png.EncoderBuffer)
	return b
}

func (p *pngPool) Put(b *png.EncoderBuffer) { p.p.Put(b) }

// estimateBands is how many evenly spaced places truecolourEstimate samples, each with two bands
// of rows, 1/128 and 2/128 of the image's height: about a fifth of the work of the whole.
const estimateBands = 8

// truecolourEstimate is the size a truecolour PNG of m would have, from samples of its rows. Each
// sample encodes a band of b rows and one of 2b rows from the same place, and counts only the
// difference: what the second b rows cost after the first, with filter history and a deflate
// window, so that the cost of starting a PNG (headers, the first row's filtering, an empty
// window) cancels out. The sum is scaled up to the image's height and the start added once. An
// image of under 256 rows is not estimated (0): trying it whole is cheap.
func truecolourEstimate(m *image.RGBA, enc png.Encoder) int64 {
	h := m.Rect.Dy()
	b := h / 128
	if b < 2 {
		return 0
	}
	size := func(y, rows int) int64 {
		var n countWriter
		sub := m.SubImage(image.Rect(m.Rect.Min.X, y, m.Rect.Max.X, y+rows))
		if enc.Encode(&n, sub) != nil {
			return -1
		}
		return int64(n)
	}
	var marginal, start int64
	for k := range estimateBands {
		y := m.Rect.Min.Y + k*(h-2*b)/(estimateBands-1)
		one, two := size(y, b), size(y, 2*b)
		if one < 0 || two < 0 {
			return 0
		}
		marginal += max(0, two-one)
		start += max(0, 2*one-two)
	}
	return marginal*int64(h)/int64(estimateBands*b) + start/estimateBands
}

// countWriter counts what is written to it.
type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

// capWriter fails with errTooBig once more than max bytes are written, so a PNG that will not fit
// is given up early.
type capWriter struct {
	b   *bytes.Buffer
	max int64
}

func (w *capWriter) Write(p []byte) (int, error) {
	if int64(w.b.Len()+len(p)) > w.max {
		return 0, errTooBig
	}
	return w.b.Write(p)
}

// result is a shrunk file: written now or reused.
type result struct {
	path, ext, sum string
	size           int64
	width, height  int
}

// reuse finds a shrunk file of an earlier run at stem + .jpg or .png. It is used only if it is
// whole: within maxBytes, its header decodes and it ends as its format ends. (Files appear there
// only by rename, so a partial one can come only from a crash before the data reached the disk.)
func reuse(stem string, maxBytes int64) (result, bool) {
	for _, ext := range []string{".jpg", ".png"} {
		p := stem + ext
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 || fi.Size() > maxBytes {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil || int64(len(data)) > maxBytes {
			continue
		}
		cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			continue
		}
		switch {
		case format == "jpeg" && ext == ".jpg" && bytes.HasSuffix(data, []byte{0xFF, 0xD9}):
		case format == "png" && ext == ".png" && bytes.HasSuffix(data, []byte("IEND\xaeB`\x82")):
		default:
			continue
		}
		sum := blake3.Sum256(data)
		return result{path: p, ext: ext, sum: hex.EncodeToString(sum[:]), size: int64(len(data)),
			width: cfg.Width, height: cfg.Height}, true
	}
	return result{}, false
}

// writeAtomic writes b to path through a temporary file in the same folder, renamed into place,
// hashing what it writes. Files are 0600 and a new folder 0700.
func writeAtomic(path string, b []byte) (string, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, ".shrink-*.tmp")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	h := blake3.New()
	_, err = io.MultiWriter(f, h).Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// reasons are why an image of this format, header and size is not kept: none means kept.
func reasons(format string, cfg image.Config, size int64, opts Options) []string {
	var why []string
	if long := max(cfg.Width, cfg.Height); long > opts.MaxEdge {
		why = append(why, fmt.Sprintf("long edge %d px over --max-edge %d", long, opts.MaxEdge))
	}
	if size > opts.MaxBytes {
		why = append(why, fmt.Sprintf("%d bytes over --max-bytes %d", size, opts.MaxBytes))
	}
	if !modelFormat(format) {
		why = append(why, strings.ToUpper(format)+" is not a format models take")
	}
	return why
}

// keptByHead decides "kept" from the file's size and its first 64 KiB alone, for PNG, JPEG and
// WebP (whose animation flags stand in the head; a GIF's frames must be counted to the end). It
// reports false when the head does not settle it, and the caller reads the file whole.
func keptByHead(rec *manifest.Record, opts Options) (bool, error) {
	f, err := os.Open(rec.Path)
	if err != nil {
		return false, fileError(rec.Path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return false, nil // load says what is wrong
	}
	if rec.HasSize && rec.Size != fi.Size() {
		return false, fault.Errorf(fault.FileChanged, "%s: changed since it was sniffed: %d bytes, the record says %d", rec.Path, fi.Size(), rec.Size)
	}
	head := make([]byte, min(fi.Size(), 64<<10))
	if _, err := io.ReadFull(f, head); err != nil {
		return false, nil
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(head))
	if err != nil || format == "gif" || cfg.Width <= 0 || cfg.Height <= 0 ||
		int64(cfg.Width)*int64(cfg.Height) > opts.MaxPixels || len(reasons(format, cfg, fi.Size(), opts)) > 0 {
		return false, nil
	}
	if format == "png" && !pngPixelsInHead(head) {
		return false, nil // the head ends before the pixels: an acTL could still follow
	}
	if animated(format, head) || !profileInHead(format, head) || profileOf(format, head, heifProps{}).conv != nil {
		return false, nil
	}
	rec.Shrink = &manifest.Shrink{Action: Kept, Reason: "within limits"}
	return true, nil
}

// pngPixelsInHead reports whether the chunks of a PNG's head reach its first IDAT, so that every
// chunk that must come before the pixels (acTL among them) is in the head.
func pngPixelsInHead(d []byte) bool {
	for i := 8; i+8 <= len(d); {
		if string(d[i+4:i+8]) == "IDAT" {
			return true
		}
		i += 12 + int(binary.BigEndian.Uint32(d[i:]))
	}
	return false
}
