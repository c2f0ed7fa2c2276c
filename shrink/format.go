package shrink

import (
	"bytes"
	"encoding/binary"
	"image"

	"github.com/attachctl/attachctl/sniff"
)

// animated reports whether the file is an animation (a GIF of more than one frame, an APNG of
// more than one frame, or a WebP with its animation flag), judged from its blocks without decoding.
func animated(format string, d []byte) bool {
	switch format {
	case "gif":
		return gifFrames(d) > 1
	case "png":
		if c := pngChunk(d, "acTL"); len(c) >= 4 {
			return binary.BigEndian.Uint32(c) > 1
		}
	case "webp":
		if c := riffChunk(d, "VP8X"); len(c) >= 1 {
			return c[0]&0x02 != 0
		}
	}
	return false
}

// gifFrames counts a GIF's image descriptors, up to 2, by walking its blocks.
func gifFrames(d []byte) int {
	if len(d) < 13 || !bytes.HasPrefix(d, []byte("GIF8")) {
		return 0
	}
	i := 13
	if d[10]&0x80 != 0 { // global colour table
		i += 3 << (d[10]&7 + 1)
	}
	skipSub := func() bool { // data sub-blocks up to the terminator
		for i < len(d) {
			n := int(d[i])
			i++
			if n == 0 {
				return true
			}
			i += n
		}
		return false
	}
	frames := 0
	for i < len(d) {
		switch d[i] {
		case 0x21: // extension: label, then sub-blocks
			i += 2
			if !skipSub() {
				return frames
			}
		case 0x2C: // image descriptor
			frames++
			if frames > 1 || i+10 > len(d) {
				return frames
			}
			flags := d[i+9]
			i += 10
			if flags&0x80 != 0 {
				i += 3 << (flags&7 + 1)
			}
			i++ // LZW minimum code size
			if !skipSub() {
				return frames
			}
		default: // trailer or garbage
			return frames
		}
	}
	return frames
}

// modelFormat reports whether models take the format as it is (docs/resolve.md: PNG, JPEG, GIF,
// WebP).
func modelFormat(format string) bool {
	switch format {
	case "png", "jpeg", "gif", "webp":
		return true
	}
	return false
}

// The PNG-or-JPEG heuristic, on the image about to be encoded:
//   - any pixel not fully opaque: PNG (JPEG has no alpha);
//   - a source that was YCbCr (a JPEG or a lossy WebP) stays JPEG: its pixels are already lossy
//     and PNG would only make them bigger;
//   - else PNG when at least flatShare of the pixels equal their left neighbour exactly (flat
//     areas: screenshots, diagrams, UI), JPEG otherwise (photos: noise makes neighbours differ).
//
// Area averaging keeps flat areas exactly flat, so the share is about the same as the original's.
const flatShare = 0.30

// hasAlpha reports whether a premultiplied RGBA image has a pixel that is not fully opaque.
func hasAlpha(m *image.RGBA) bool {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	for y := 0; y < h; y++ {
		row := m.Pix[y*m.Stride : y*m.Stride+4*w]
		for i := 3; i < len(row); i += 4 {
			if row[i] != 255 {
				return true
			}
		}
	}
	return false
}

// flat reports whether at least flatShare of the pixels equal their left neighbour.
func flat(pix []uint8, w, h, stride, n int) bool {
	if w < 2 {
		return true
	}
	same, total := 0, 0
	for y := 0; y < h; y++ {
		row := pix[y*stride : y*stride+w*n]
		switch n {
		case 1:
			for x := 1; x < len(row); x++ {
				if row[x] == row[x-1] {
					same++
				}
			}
		case 4:
			prev := binary.LittleEndian.Uint32(row)
			for x := 4; x+4 <= len(row); x += 4 {
				p := binary.LittleEndian.Uint32(row[x:])
				if p == prev {
					same++
				}
				prev = p
			}
		default:
			for x := n; x < len(row); x += n {
				if bytes.Equal(row[x:x+n], row[x-n:x]) {
					same++
				}
			}
		}
		total += w - 1
	}
	return float64(same) >= flatShare*float64(total)
}

// pngChunk returns the data of the first chunk of type typ before IDAT.
func pngChunk(d []byte, typ string) []byte {
	i := 8
	for i+8 <= len(d) {
		n := int(binary.BigEndian.Uint32(d[i:]))
		t := string(d[i+4 : i+8])
		if n < 0 || i+12+n > len(d) || t == "IDAT" {
			return nil
		}
		if t == typ {
			return d[i+8 : i+8+n]
		}
		i += 12 + n
	}
	return nil
}

// riffChunk returns the data of the first top-level chunk fourcc in a RIFF (WebP) file.
func riffChunk(d []byte, fourcc string) []byte {
	i := 12
	for i+8 <= len(d) {
		n := int(binary.LittleEndian.Uint32(d[i+4:]))
		if n < 0 || i+8+n > len(d) {
			return nil
		}
		if string(d[i:i+4]) == fourcc {
			return d[i+8 : i+8+n]
		}
		i += 8 + n + n&1
	}
	return nil
}

// heifProps is a HEIF container's header as shrink uses it.
type heifProps struct {
	sniff.HEIFProps
	format   string // "heic" (HEIC and other HEIF) or "avif": which decoder
	sequence bool   // an image sequence (animation) brand
}

// heifHeader reads a HEIC, HEIF or AVIF container's header; ok is false for any other file.
func heifHeader(head []byte) (heifProps, bool) {
	if len(head) < 12 || string(head[4:8]) != "ftyp" {
		return heifProps{}, false
	}
	p, _ := sniff.HEIF(head)
	if p.Brand == "" {
		return heifProps{}, false
	}
	hp := heifProps{HEIFProps: p, format: "heic"}
	n := min(int(binary.BigEndian.Uint32(head)), len(head))
	for i := 8; i+4 <= n; i += 4 { // the major brand, then the compatible ones
		if b := string(head[i : i+4]); b == "avif" || b == "avis" {
			hp.format = "avif"
		}
	}
	switch p.Brand {
	case "avis", "msf1", "hevc", "hevx":
		hp.sequence = true
	}
	return hp, true
}
