package sniff

import (
	"bytes"
	"encoding/binary"
	"io"
)

// header gives random access to a file's first bytes. Most reads are served from head, the bytes
// the read pass already holds; a few formats keep what we need further in (a JPEG's SOF after large
// APP segments, a TIFF's IFD written after the pixels). For those, header does a bounded extra
// ReadAt of the header structures only, never of pixel data: at most maxExtraReads small reads.
type header struct {
	head  []byte
	size  int64       // the file's size; nothing is read at or past it
	ra    io.ReaderAt // nil: head is all there is
	reads int
	buf   []byte // scratch for reads past head
}

const (
	maxExtraReads = 64       // reads past head per file
	maxSegment    = 64 << 10 // the largest structure read past head (an APP1 segment is < 64 KiB)
	// A HEIF meta box holds the colr box's ICC profile, which a camera or a calibrated display
	// may make larger than a JPEG segment can be; the meta box is still only header structures.
	maxMeta = 4 << 20
)

// at returns the n bytes at off, or nil when they are not there (past the end, or over budget).
func (h *header) at(off int64, n int) []byte { return h.upTo(off, n, maxSegment) }

// upTo is at for a structure that may be as large as limit.
func (h *header) upTo(off int64, n, limit int) []byte {
	if off < 0 || n < 0 || n > limit || off > h.size-int64(n) {
		return nil
	}
	if off+int64(n) <= int64(len(h.head)) {
		return h.head[off : off+int64(n)]
	}
	if h.ra == nil || h.reads >= maxExtraReads {
		return nil
	}
	h.reads++
	if cap(h.buf) < n {
		h.buf = make([]byte, n)
	}
	b := h.buf[:n]
	if got, err := h.ra.ReadAt(b, off); got != n && err != nil {
		return nil
	}
	return b
}

// imageInfo is what the header says about a raster image.
type imageInfo struct {
	Width, Height int
	Orientation   int // EXIF orientation 1..8, 0 when absent
}

// parseImage reads a raster image's dimensions (and EXIF orientation where the format carries it
// cheaply) from its header, choosing the parser by the magic bytes. It never panics and never reads
// pixel data; anything it cannot make sense of yields zeros.
func parseImage(h *header) imageInfo {
	var info imageInfo
	b := h.at(0, 12)
	if b == nil {
		b = h.head
	}
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		info = parsePNG(h)
	case bytes.HasPrefix(b, []byte("\xff\xd8")):
		info = parseJPEG(h)
	case bytes.HasPrefix(b, []byte("GIF87a")) || bytes.HasPrefix(b, []byte("GIF89a")):
		if p := h.at(6, 4); p != nil {
			info.Width = int(binary.LittleEndian.Uint16(p))
			info.Height = int(binary.LittleEndian.Uint16(p[2:]))
		}
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		info = parseWebP(h)
	case bytes.HasPrefix(b, []byte("BM")):
		info = parseBMP(h)
	case bytes.HasPrefix(b, []byte("II*\x00")) || bytes.HasPrefix(b, []byte("MM\x00*")):
		info = parseTIFF(h, 0)
	case len(b) >= 12 && string(b[4:8]) == "ftyp":
		if p := parseHEIF(h); p.Brand != "" {
			info = imageInfo{Width: p.Width, Height: p.Height, Orientation: p.Orientation}
		}
	}
	if info.Width <= 0 || info.Height <= 0 {
		info.Width, info.Height = 0, 0
	}
	if info.Orientation < 1 || info.Orientation > 8 {
		info.Orientation = 0
	}
	return info
}

func parsePNG(h *header) imageInfo {
	p := h.at(8, 16) // length, "IHDR", width, height
	if p == nil || string(p[4:8]) != "IHDR" {
		return imageInfo{}
	}
	w, ht := binary.BigEndian.Uint32(p[8:]), binary.BigEndian.Uint32(p[12:])
	if w > 1<<31-1 || ht > 1<<31-1 {
		return imageInfo{}
	}
	info := imageInfo{Width: int(w), Height: int(ht)}
	// The EXIF orientation is in an eXIf chunk, which must come before the first IDAT.
	for off, n := int64(8), 0; n < 64; n++ {
		c := h.at(off, 8)
		if c == nil || string(c[4:8]) == "IDAT" {
			break
		}
		l := int64(binary.BigEndian.Uint32(c))
		if string(c[4:8]) == "eXIf" {
			if t := h.at(off+8, int(l)); t != nil {
				info.Orientation = exifOrientation(t)
			}
			break
		}
		off += 12 + l
	}
	return info
}

func parseBMP(h *header) imageInfo {
	p := h.at(14, 8)
	if p == nil {
		return imageInfo{}
	}
	if binary.LittleEndian.Uint32(p) == 12 { // BITMAPCOREHEADER: 16-bit unsigned sizes
		return imageInfo{Width: int(binary.LittleEndian.Uint16(p[4:])), Height: int(binary.LittleEndian.Uint16(p[6:]))}
	}
	if p = h.at(14, 12); p == nil {
		return imageInfo{}
	}
	w := int64(int32(binary.LittleEndian.Uint32(p[4:])))
	ht := int64(int32(binary.LittleEndian.Uint32(p[8:])))
	if ht < 0 { // top-down
		ht = -ht
	}
	if w > 1<<31-1 || ht > 1<<31-1 {
		return imageInfo{}
	}
	return imageInfo{Width: int(w), Height: int(ht)}
}

func parseWebP(h *header) imageInfo {
	p := h.at(12, 18) // first chunk header and the start of its data
	if p == nil {
		return imageInfo{}
	}
	d := p[8:]
	switch string(p[:4]) {
	case "VP8 ": // lossy: frame tag (3), start code 9d 01 2a, 14-bit width and height
		if d[3] != 0x9d || d[4] != 0x01 || d[5] != 0x2a {
			return imageInfo{}
		}
		return imageInfo{
			Width:  int(binary.LittleEndian.Uint16(d[6:]) & 0x3fff),
			Height: int(binary.LittleEndian.Uint16(d[8:]) & 0x3fff),
		}
	case "VP8L": // lossless: signature 0x2f, then width-1 and height-1 in 14 bits each
		if d[0] != 0x2f {
			return imageInfo{}
		}
		v := binary.LittleEndian.Uint32(d[1:])
		return imageInfo{Width: int(v&0x3fff) + 1, Height: int(v>>14&0x3fff) + 1}
	case "VP8X": // extended: flags (1), reserved (3), canvas width-1 and height-1 in 24 bits each
		w := int(d[4]) | int(d[5])<<8 | int(d[6])<<16
		ht := int(d[7]) | int(d[8])<<8 | int(d[9])<<16
		info := imageInfo{Width: w + 1, Height: ht + 1}
		if d[0]&0x08 != 0 { // the EXIF flag: an EXIF chunk follows, usually after the pixels
			info.Orientation = webpExifOrientation(h)
		}
		return info
	}
	return imageInfo{}
}

// webpExifOrientation finds the EXIF chunk among a WebP's top-level chunks (reading chunk headers
// only, skipping the image data by its length) and reads its orientation.
func webpExifOrientation(h *header) int {
	for off, n := int64(12), 0; n < 32; n++ {
		c := h.at(off, 8)
		if c == nil {
			return 0
		}
		l := int64(binary.LittleEndian.Uint32(c[4:]))
		if string(c[:4]) == "EXIF" {
			t := h.at(off+8, int(l))
			if t == nil {
				return 0
			}
			return exifOrientation(bytes.TrimPrefix(t, []byte("Exif\x00\x00")))
		}
		off += 8 + l + l&1
	}
	return 0
}

// parseJPEG walks the marker segments from SOI to the first SOF, taking the EXIF orientation from
// an APP1 "Exif" segment on the way. Segments past head are reached by the bounded ReadAt of
// header.at (segment headers only, plus the APP1 body when it lies there).
func parseJPEG(h *header) imageInfo {
	var info imageInfo
	off := int64(2)
	for seg := 0; seg < 512; seg++ {
		m := h.at(off, 2)
		if m == nil || m[0] != 0xff {
			return info
		}
		marker := m[1]
		switch {
		case marker == 0xff: // fill byte
			off++
			continue
		case marker == 0x01 || marker >= 0xd0 && marker <= 0xd8: // standalone markers
			off += 2
			continue
		case marker == 0xd9 || marker == 0xda: // EOI or SOS before any SOF: no size
			return info
		}
		l := h.at(off+2, 2)
		if l == nil {
			return info
		}
		n := int(binary.BigEndian.Uint16(l))
		if n < 2 {
			return info
		}
		switch {
		case marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 && marker != 0xcc:
			p := h.at(off+4, 5) // precision, height, width
			if p == nil {
				return info
			}
			info.Height = int(binary.BigEndian.Uint16(p[1:]))
			info.Width = int(binary.BigEndian.Uint16(p[3:]))
			return info
		case marker == 0xe1 && info.Orientation == 0 && n >= 2+6:
			if p := h.at(off+4, n-2); p != nil && string(p[:6]) == "Exif\x00\x00" {
				info.Orientation = exifOrientation(p[6:])
			}
		}
		off += 2 + int64(n)
	}
	return info
}

// exifOrientation reads tag 0x0112 from IFD0 of a TIFF structure (an EXIF payload), in either
// byte order. It returns 0 when there is none.
func exifOrientation(t []byte) int {
	sub := &header{head: t, size: int64(len(t))}
	return parseTIFF(sub, 0).Orientation
}

// parseTIFF reads IFD0 of a TIFF structure starting at base: ImageWidth (256), ImageLength (257)
// and Orientation (274), each SHORT or LONG.
func parseTIFF(h *header, base int64) imageInfo {
	var info imageInfo
	p := h.at(base, 8)
	if p == nil {
		return info
	}
	var bo binary.ByteOrder
	switch string(p[:4]) {
	case "II*\x00":
		bo = binary.LittleEndian
	case "MM\x00*":
		bo = binary.BigEndian
	default:
		return info
	}
	ifd := base + int64(bo.Uint32(p[4:]))
	c := h.at(ifd, 2)
	if c == nil {
		return info
	}
	count := int(bo.Uint16(c))
	const maxEntries = maxSegment / 12
	if count > maxEntries {
		count = maxEntries
	}
	entries := h.at(ifd+2, 12*count)
	for len(entries) >= 12 {
		e := entries[:12]
		entries = entries[12:]
		tag, typ := bo.Uint16(e), bo.Uint16(e[2:])
		if bo.Uint32(e[4:]) != 1 { // a count other than one is not a scalar
			continue
		}
		var v int
		switch typ {
		case 3: // SHORT
			v = int(bo.Uint16(e[8:]))
		case 4: // LONG
			u := bo.Uint32(e[8:])
			if u > 1<<31-1 {
				continue
			}
			v = int(u)
		default:
			continue
		}
		switch tag {
		case 256:
			info.Width = v
		case 257:
			info.Height = v
		case 274:
			info.Orientation = v
		}
	}
	return info
}

// Image reads a raster image's width, height and EXIF orientation (0 when it carries none) from
// its encoded bytes, as Fill does from a file's header: PNG (IHDR, eXIf), JPEG (SOF, APP1 Exif),
// GIF, WebP (VP8, VP8L, VP8X and its EXIF chunk), BMP, TIFF, and HEIC/HEIF/AVIF (see HEIF). It
// never panics on any input.
func Image(data []byte) (width, height, orientation int) {
	info := parseImage(&header{head: data, size: int64(len(data))})
	return info.Width, info.Height, info.Orientation
}
