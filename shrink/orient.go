package shrink

import "image"

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
