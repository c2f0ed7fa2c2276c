package shrink

import (
	"bytes"
	"encoding/binary"
	"image"
)

// orientation reads the EXIF orientation (1..8) from a JPEG's APP1 segment, a PNG's eXIf chunk,
// a WebP's EXIF chunk or a TIFF's first IFD. It returns 1 when there is none or it is unreadable.
func orientation(data []byte) int {
	var tiff []byte
	switch {
	case len(data) > 4 && data[0] == 0xFF && data[1] == 0xD8:
		tiff = jpegExif(data)
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		tiff = pngChunk(data, "eXIf")
	case len(data) > 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP":
		tiff = riffChunk(data, "EXIF")
		tiff = bytes.TrimPrefix(tiff, []byte("Exif\x00\x00"))
	case bytes.HasPrefix(data, []byte("II*\x00")) || bytes.HasPrefix(data, []byte("MM\x00*")):
		tiff = data
	}
	if o := tiffOrientation(tiff); o >= 1 && o <= 8 {
		return o
	}
	return 1
}

// jpegExif returns the TIFF structure of the first Exif APP1 segment before the scan.
func jpegExif(d []byte) []byte {
	i := 2
	for i+4 <= len(d) {
		if d[i] != 0xFF {
			return nil
		}
		m := d[i+1]
		if m == 0xFF { // fill byte
			i++
			continue
		}
		if m == 0xDA || m == 0xD9 { // start of scan, end of image: no EXIF before the pixels
			return nil
		}
		if m >= 0xD0 && m <= 0xD7 || m == 0x01 {
			i += 2
			continue
		}
		n := int(binary.BigEndian.Uint16(d[i+2:]))
		if n < 2 || i+2+n > len(d) {
			return nil
		}
		seg := d[i+4 : i+2+n]
		if m == 0xE1 && bytes.HasPrefix(seg, []byte("Exif\x00\x00")) {
			return seg[6:]
		}
		i += 2 + n
	}
	return nil
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

// tiffOrientation reads tag 0x0112 of IFD0 of a TIFF structure, or 0.
func tiffOrientation(t []byte) int {
	if len(t) < 8 {
		return 0
	}
	var bo binary.ByteOrder
	switch string(t[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return 0
	}
	off := int64(bo.Uint32(t[4:]))
	if off < 8 || off+2 > int64(len(t)) {
		return 0
	}
	n := int64(bo.Uint16(t[off:]))
	for k := int64(0); k < n; k++ {
		e := off + 2 + 12*k
		if e+12 > int64(len(t)) {
			return 0
		}
		if bo.Uint16(t[e:]) != 0x0112 {
			continue
		}
		switch bo.Uint16(t[e+2:]) {
		case 3: // SHORT
			return int(bo.Uint16(t[e+8:]))
		case 4: // LONG
			return int(bo.Uint32(t[e+8:]))
		}
		return 0
	}
	return 0
}

// swapsAxes reports whether orientation o turns the image a quarter turn (5..8).
func swapsAxes(o int) bool { return o >= 5 && o <= 8 }

// orientPix applies EXIF orientation o to a w x h plane of n-channel samples with the given
// stride and returns the displayed plane, tightly packed, and its size. The EXIF meaning of o is
// where the stored 0th row and 0th column go: 1 top/left, 2 top/right, 3 bottom/right,
// 4 bottom/left, 5 left/top, 6 right/top, 7 right/bottom, 8 left/bottom.
func orientPix(pix []uint8, w, h, stride, n, o int) ([]uint8, int, int) {
	ow, oh := w, h
	if swapsAxes(o) {
		ow, oh = h, w
	}
	out := make([]uint8, ow*oh*n)
	// src maps a displayed (x, y) to the stored pixel.
	var src func(x, y int) (int, int)
	switch o {
	case 2:
		src = func(x, y int) (int, int) { return w - 1 - x, y }
	case 3:
		src = func(x, y int) (int, int) { return w - 1 - x, h - 1 - y }
	case 4:
		src = func(x, y int) (int, int) { return x, h - 1 - y }
	case 5:
		src = func(x, y int) (int, int) { return y, x }
	case 6:
		src = func(x, y int) (int, int) { return y, h - 1 - x }
	case 7:
		src = func(x, y int) (int, int) { return w - 1 - y, h - 1 - x }
	case 8:
		src = func(x, y int) (int, int) { return w - 1 - y, x }
	default:
		for y := 0; y < h; y++ {
			copy(out[y*w*n:(y+1)*w*n], pix[y*stride:])
		}
		return out, w, h
	}
	for y := 0; y < oh; y++ {
		row := out[y*ow*n : (y+1)*ow*n]
		for x := 0; x < ow; x++ {
			sx, sy := src(x, y)
			copy(row[x*n:x*n+n], pix[sy*stride+sx*n:])
		}
	}
	return out, ow, oh
}

// orient applies orientation o to an image that resize made (origin at 0,0).
func orient(m image.Image, o int) image.Image {
	if o <= 1 || o > 8 {
		return m
	}
	switch s := m.(type) {
	case *image.YCbCr: // 4:4:4, or 4:2:0 of even size: quarter turns keep the chroma grid
		w, h := s.Rect.Dx(), s.Rect.Dy()
		cw, ch := w, h
		if s.SubsampleRatio == image.YCbCrSubsampleRatio420 {
			cw, ch = w/2, h/2
		}
		y, ow, oh := orientPix(s.Y, w, h, s.YStride, 1, o)
		cb, ocw, _ := orientPix(s.Cb, cw, ch, s.CStride, 1, o)
		cr, _, _ := orientPix(s.Cr, cw, ch, s.CStride, 1, o)
		return &image.YCbCr{Y: y, Cb: cb, Cr: cr, YStride: ow, CStride: ocw,
			SubsampleRatio: s.SubsampleRatio, Rect: image.Rect(0, 0, ow, oh)}
	case *image.Gray:
		p, ow, oh := orientPix(s.Pix, s.Rect.Dx(), s.Rect.Dy(), s.Stride, 1, o)
		return &image.Gray{Pix: p, Stride: ow, Rect: image.Rect(0, 0, ow, oh)}
	case *image.RGBA:
		p, ow, oh := orientPix(s.Pix, s.Rect.Dx(), s.Rect.Dy(), s.Stride, 4, o)
		return &image.RGBA{Pix: p, Stride: 4 * ow, Rect: image.Rect(0, 0, ow, oh)}
	}
	return m
}
