package sniff

import (
	"encoding/binary"
	"image"
	"math"
)

// HEIFProps is what a HEIF container (HEIC, HEIF, AVIF: ISO/IEC 23008-12 over the ISO base media
// file format) says of its primary image, from the boxes of its meta box.
//
// Width and Height are the primary item's ispe: the image as coded, before the container's
// rotation, as "pixels as stored" means for every other format. Orientation is the container's
// own transforms (irot, then or before imir, in the order the item lists them) written as the
// EXIF orientation that does the same, so a reader turns every format upright one way; it is 0
// when the image has none. A HEIF file's EXIF orientation is not read: the format says the
// transform properties rule, and an iPhone photo carries both.
//
// Crop is the clean aperture (clap) in stored pixels, as libheif rounds it, to be cut before
// the rotation and mirroring; empty when the item has none, or one that lies outside the image
// or comes after irot or imir (MIAF puts it first).
type HEIFProps struct {
	Brand         string // the ftyp box's major brand: "heic", "mif1", "avif"...
	Width, Height int
	Orientation   int
	Crop          image.Rectangle
	ICC           []byte // the colr box's ICC profile (prof or rICC), nil when none
	NCLX          *NCLX  // the colr box's coded colour description, nil when none
}

// NCLX is a colr box of type nclx: code points of ITU-T H.273.
type NCLX struct {
	Primaries, Transfer, Matrix int
	FullRange                   bool
}

// HEIF reads the container boxes of a HEIC, HEIF or AVIF file; ok is false when data is not one
// or its primary image has no size. It never panics on any input.
func HEIF(data []byte) (props HEIFProps, ok bool) {
	p := parseHEIF(&header{head: data, size: int64(len(data))})
	return p, p.Brand != "" && p.Width > 0 && p.Height > 0
}

// heifBrands are the ftyp brands of still images this parser reads.
var heifBrands = map[string]bool{"heic": true, "heix": true, "heim": true, "heis": true,
	"mif1": true, "msf1": true, "avif": true, "avis": true, "hevc": true, "hevx": true}

// box is one box: its type and where its payload lies.
type box struct {
	typ       string
	off, size int64 // payload
}

// boxes lists the boxes in [off, end) of a bounded header; at most 64.
func boxes(h *header, off, end int64) []box {
	var out []box
	for len(out) < 64 && off+8 <= end {
		b := h.at(off, 8)
		if b == nil {
			break
		}
		size, hl := int64(binary.BigEndian.Uint32(b)), int64(8)
		switch size {
		case 0:
			size = end - off
		case 1:
			l := h.at(off+8, 8)
			if l == nil {
				return out
			}
			v := binary.BigEndian.Uint64(l)
			if v > 1<<62 {
				return out
			}
			size, hl = int64(v), 16
		}
		if size < hl || off+size > end {
			break
		}
		out = append(out, box{typ: string(b[4:8]), off: off + hl, size: size - hl})
		off += size
	}
	return out
}

// parseHEIF walks ftyp and meta: pitm names the primary item, ipma lists its properties by
// index into ipco, and among those are ispe (size), irot, imir and colr.
func parseHEIF(h *header) HEIFProps {
	var p HEIFProps
	top := boxes(h, 0, h.size)
	if len(top) == 0 || top[0].typ != "ftyp" || top[0].size < 8 {
		return p
	}
	ftyp := h.at(top[0].off, int(min(top[0].size, 256)))
	if ftyp == nil {
		return p
	}
	brand := string(ftyp[:4])
	known := heifBrands[brand]
	for i := 8; i+4 <= len(ftyp) && !known; i += 4 {
		known = heifBrands[string(ftyp[i:i+4])]
	}
	if !known {
		return p
	}
	var meta []byte
	for _, b := range top {
		if b.typ == "meta" && b.size >= 4 && b.size <= maxMeta {
			meta = h.upTo(b.off, int(b.size), maxMeta)
			break
		}
	}
	if meta == nil {
		return p
	}
	meta = append([]byte(nil), meta...) // h.at's scratch buffer is reused by the next read
	m := &header{head: meta, size: int64(len(meta))}
	var primary uint32
	var ipco, ipma []byte
	for _, b := range boxes(m, 4, m.size) { // after the FullBox version and flags
		d := meta[b.off : b.off+b.size]
		switch b.typ {
		case "pitm":
			if len(d) >= 6 && d[0] == 0 {
				primary = uint32(binary.BigEndian.Uint16(d[4:]))
			} else if len(d) >= 8 {
				primary = binary.BigEndian.Uint32(d[4:])
			}
		case "iprp":
			sub := &header{head: d, size: int64(len(d))}
			for _, c := range boxes(sub, 0, sub.size) {
				switch c.typ {
				case "ipco":
					ipco = d[c.off : c.off+c.size]
				case "ipma":
					if ipma == nil {
						ipma = d[c.off : c.off+c.size]
					}
				}
			}
		}
	}
	props := boxes(&header{head: ipco, size: int64(len(ipco))}, 0, int64(len(ipco)))
	orient := [4]int{1, 0, 0, 1} // the displayed-from-stored map as a 2x2 matrix, y down
	transformed := false
	var clap []byte
	for _, idx := range associations(ipma, primary) {
		if idx < 1 || idx > len(props) {
			continue
		}
		b := props[idx-1]
		d := ipco[b.off : b.off+b.size]
		switch b.typ {
		case "ispe": // FullBox, width, height
			if len(d) >= 12 {
				w, ht := binary.BigEndian.Uint32(d[4:]), binary.BigEndian.Uint32(d[8:])
				if w <= 1<<31-1 && ht <= 1<<31-1 {
					p.Width, p.Height = int(w), int(ht)
				}
			}
		case "clap": // clean aperture: width, height, horizontal and vertical offset, each N/D
			if len(d) >= 32 && !transformed {
				clap = d[:32]
			}
		case "irot": // angle in quarter turns anticlockwise
			if len(d) >= 1 {
				for range d[0] & 3 {
					orient = mul([4]int{0, 1, -1, 0}, orient)
				}
				transformed = true
			}
		case "imir": // mode 0: top and bottom exchanged; 1: left and right (ISO/IEC 23008-12:2022, as libheif and libavif read it)
			if len(d) >= 1 {
				if d[0]&1 == 0 {
					orient = mul([4]int{1, 0, 0, -1}, orient)
				} else {
					orient = mul([4]int{-1, 0, 0, 1}, orient)
				}
				transformed = true
			}
		case "colr":
			if len(d) < 4 {
				continue
			}
			switch string(d[:4]) {
			case "prof", "rICC":
				if p.ICC == nil {
					p.ICC = append([]byte(nil), d[4:]...)
				}
			case "nclx":
				if len(d) >= 11 && p.NCLX == nil {
					p.NCLX = &NCLX{Primaries: int(binary.BigEndian.Uint16(d[4:])),
						Transfer: int(binary.BigEndian.Uint16(d[6:])), Matrix: int(binary.BigEndian.Uint16(d[8:])),
						FullRange: d[10]&0x80 != 0}
				}
			}
		}
	}
	if clap != nil {
		p.Crop = cleanAperture(clap, p.Width, p.Height)
	}
	if transformed {
		for o, m := range exifMatrices {
			if m == orient {
				p.Orientation = o
			}
		}
	}
	p.Brand = brand
	return p
}

// cleanAperture is the rectangle a clap box keeps of a w x h image: centred at the image's
// centre plus the offsets, its edges rounded down as libheif rounds them. Empty when the box is
// malformed or the rectangle is not inside the image.
func cleanAperture(d []byte, w, h int) image.Rectangle {
	frac := func(i int, signed bool) (float64, bool) {
		n, den := binary.BigEndian.Uint32(d[8*i:]), binary.BigEndian.Uint32(d[8*i+4:])
		if den == 0 {
			return 0, false
		}
		if signed {
			return float64(int32(n)) / float64(den), true
		}
		return float64(n) / float64(den), true
	}
	cw, ok1 := frac(0, false)
	ch, ok2 := frac(1, false)
	ox, ok3 := frac(2, true)
	oy, ok4 := frac(3, true)
	if !ok1 || !ok2 || !ok3 || !ok4 || w <= 0 || h <= 0 {
		return image.Rectangle{}
	}
	cx, cy := ox+float64(w-1)/2, oy+float64(h-1)/2
	left, right := math.Floor(cx-(cw-1)/2), math.Floor(cx+(cw-1)/2)
	top, bottom := math.Floor(cy-(ch-1)/2), math.Floor(cy+(ch-1)/2)
	if left < 0 || top < 0 || right >= float64(w) || bottom >= float64(h) || right < left || bottom < top {
		return image.Rectangle{}
	}
	r := image.Rect(int(left), int(top), int(right)+1, int(bottom)+1)
	if r == image.Rect(0, 0, w, h) {
		return image.Rectangle{} // the whole image: nothing to cut
	}
	return r
}

// associations are the property indices (1-based into ipco) ipma lists for item, in order.
func associations(ipma []byte, item uint32) []int {
	if len(ipma) < 8 {
		return nil
	}
	version, flags := ipma[0], ipma[3]
	n := binary.BigEndian.Uint32(ipma[4:])
	d := ipma[8:]
	for range min(n, 1<<16) {
		var id uint32
		if version < 1 {
			if len(d) < 2 {
				return nil
			}
			id, d = uint32(binary.BigEndian.Uint16(d)), d[2:]
		} else {
			if len(d) < 4 {
				return nil
			}
			id, d = binary.BigEndian.Uint32(d), d[4:]
		}
		if len(d) < 1 {
			return nil
		}
		count := int(d[0])
		d = d[1:]
		var out []int
		for range count {
			var idx int
			if flags&1 != 0 {
				if len(d) < 2 {
					return nil
				}
				idx, d = int(binary.BigEndian.Uint16(d)&0x7fff), d[2:]
			} else {
				if len(d) < 1 {
					return nil
				}
				idx, d = int(d[0]&0x7f), d[1:]
			}
			out = append(out, idx)
		}
		if id == item {
			return out
		}
	}
	return nil
}

// mul is the product a b of 2x2 matrices in row order: b applied first.
func mul(a, b [4]int) [4]int {
	return [4]int{a[0]*b[0] + a[1]*b[2], a[0]*b[1] + a[1]*b[3], a[2]*b[0] + a[3]*b[2], a[2]*b[1] + a[3]*b[3]}
}

// exifMatrices map stored to displayed coordinates (x right, y down, about the centre) for each
// EXIF orientation.
var exifMatrices = map[int][4]int{
	1: {1, 0, 0, 1},
	2: {-1, 0, 0, 1},  // mirrored left to right
	3: {-1, 0, 0, -1}, // half turn
	4: {1, 0, 0, -1},  // mirrored top to bottom
	5: {0, 1, 1, 0},   // transposed
	6: {0, -1, 1, 0},  // a quarter turn clockwise
	7: {0, -1, -1, 0}, // transversed
	8: {0, 1, -1, 0},  // a quarter turn anticlockwise
}
