package shrink

import (
	"image"
	"image/color"
)

// Area averaging. Every destination pixel is the mean of the source area it covers: each source
// pixel is weighted by the share of its area that falls inside the destination pixel, so no source
// pixel is skipped (unlike sampling filters) and a flat area stays exactly flat. The filter is
// separable: one 1-D pass along each row (horizontal), then the rows are summed with their
// vertical weights. Weights are fixed point, 14 bits, and sum exactly to 1<<14 for each
// destination sample, so rounding never drifts a flat colour.
//
// Sources are read as planes of 8-bit samples with n interleaved channels. A YCbCr image is three
// planes, its chroma planes at their own (subsampled) resolution: a chroma sample covers the
// f x g block of image pixels it was subsampled from, so averaging it over the destination area is
// exactly averaging the upsampled chroma, without ever upsampling. Every other type is read row by
// row through a converter to premultiplied RGBA (or gray), so memory stays one row of the source
// plus the destination.

const wBits = 14

// axis holds the weights of one direction: destination sample j is the weighted sum of source
// samples first[j], first[j]+1, ... with weights w[off[j]:off[j+1]].
type axis struct {
	first []int32
	off   []int32
	w     []int32
}

// newAxis maps a source of n samples, each covering f image pixels of an image L pixels long (the
// last sample may cover fewer), onto d destination samples that cover the L pixels evenly.
// Lengths are compared in units of 1/d pixel, so every overlap is an exact integer.
func newAxis(L, n, f, d int) *axis {
	a := &axis{first: make([]int32, d), off: make([]int32, d+1)}
	L64, d64, f64 := int64(L), int64(d), int64(f)
	var ov []int64
	for j := 0; j < d; j++ {
		lo, hi := int64(j)*L64, int64(j+1)*L64
		i0 := int(lo / (f64 * d64))
		if i0 >= n {
			i0 = n - 1
		}
		a.first[j] = int32(i0)
		ov = ov[:0]
		var total int64
		for i := i0; i < n; i++ {
			s := int64(i) * f64 * d64
			if s >= hi {
				break
			}
			e := min(int64(i+1)*f64, L64) * d64
			o := min(e, hi) - max(s, lo)
			if o < 0 {
				o = 0
			}
			ov = append(ov, o)
			total += o
		}
		if total == 0 { // cannot happen for n samples covering L pixels; be safe
			ov = append(ov[:0], 1)
			total = 1
		}
		start := len(a.w)
		var sum int32
		big := start
		for k, o := range ov {
			wk := int32((o<<wBits + total/2) / total)
			a.w = append(a.w, wk)
			sum += wk
			if wk > a.w[big] {
				big = start + k
			}
		}
		a.w[big] += 1<<wBits - sum
		a.off[j+1] = int32(len(a.w))
	}
	return a
}

// taps pads every destination sample to the same number of weights t (zeros where it has
// fewer), moving first back where needed so first[j]+t stays within the n source samples.
// Fixed-length taps let apply unroll its inner loop.
func (a *axis) taps(n int) (first []int32, w []int32, t int) {
	for j := range a.first {
		t = max(t, int(a.off[j+1]-a.off[j]))
	}
	t = min(t, n)
	first = make([]int32, len(a.first))
	w = make([]int32, len(a.first)*t)
	for j := range a.first {
		ws := a.w[a.off[j]:a.off[j+1]]
		f := int(a.first[j])
		shift := max(0, f+t-n)
		first[j] = int32(f - shift)
		copy(w[j*t+shift:], ws)
	}
	return first, w, t
}

// hpass is the horizontal pass: one row of n-channel samples to 8.8 fixed point values.
type hpass struct {
	first []int32
	w     []int32
	t, n  int
}

func newHpass(a *axis, srcN, n int) *hpass {
	first, w, t := a.taps(srcN)
	return &hpass{first, w, t, n}
}

func (p *hpass) apply(src []uint8, out []uint16) {
	first, w, t, n := p.first, p.w, p.t, p.n
	switch {
	case n == 1 && t == 2:
		for j := range first {
			s := src[first[j] : first[j]+2 : first[j]+2]
			ww := w[2*j : 2*j+2 : 2*j+2]
			out[j] = uint16((ww[0]*int32(s[0]) + ww[1]*int32(s[1]) + 32) >> 6)
		}
	case n == 1 && t == 3:
		for j := range first {
			s := src[first[j] : first[j]+3 : first[j]+3]
			ww := w[3*j : 3*j+3 : 3*j+3]
			out[j] = uint16((ww[0]*int32(s[0]) + ww[1]*int32(s[1]) + ww[2]*int32(s[2]) + 32) >> 6)
		}
	case n == 1 && t == 4:
		for j := range first {
			s := src[first[j] : first[j]+4 : first[j]+4]
			ww := w[4*j : 4*j+4 : 4*j+4]
			out[j] = uint16((ww[0]*int32(s[0]) + ww[1]*int32(s[1]) + ww[2]*int32(s[2]) + ww[3]*int32(s[3]) + 32) >> 6)
		}
	case n == 1:
		for j := range first {
			s := src[int(first[j]) : int(first[j])+t]
			ww := w[j*t : j*t+t]
			var sum int32
			for k, wk := range ww {
				sum += wk * int32(s[k])
			}
			out[j] = uint16((sum + 32) >> 6)
		}
	case n == 4 && t == 2:
		for j := range first {
			s := src[4*first[j] : 4*first[j]+8 : 4*first[j]+8]
			w0, w1 := w[2*j], w[2*j+1]
			o := out[4*j : 4*j+4 : 4*j+4]
			o[0] = uint16((w0*int32(s[0]) + w1*int32(s[4]) + 32) >> 6)
			o[1] = uint16((w0*int32(s[1]) + w1*int32(s[5]) + 32) >> 6)
			o[2] = uint16((w0*int32(s[2]) + w1*int32(s[6]) + 32) >> 6)
			o[3] = uint16((w0*int32(s[3]) + w1*int32(s[7]) + 32) >> 6)
		}
	case n == 4 && t == 3:
		for j := range first {
			s := src[4*first[j] : 4*first[j]+12 : 4*first[j]+12]
			w0, w1, w2 := w[3*j], w[3*j+1], w[3*j+2]
			o := out[4*j : 4*j+4 : 4*j+4]
			o[0] = uint16((w0*int32(s[0]) + w1*int32(s[4]) + w2*int32(s[8]) + 32) >> 6)
			o[1] = uint16((w0*int32(s[1]) + w1*int32(s[5]) + w2*int32(s[9]) + 32) >> 6)
			o[2] = uint16((w0*int32(s[2]) + w1*int32(s[6]) + w2*int32(s[10]) + 32) >> 6)
			o[3] = uint16((w0*int32(s[3]) + w1*int32(s[7]) + w2*int32(s[11]) + 32) >> 6)
		}
	case n == 4:
		for j := range first {
			s := src[4*int(first[j]) : 4*(int(first[j])+t)]
			ww := w[j*t : j*t+t]
			var r, g, b, al int32
			for k, wk := range ww {
				px := s[4*k : 4*k+4 : 4*k+4]
				r += wk * int32(px[0])
				g += wk * int32(px[1])
				b += wk * int32(px[2])
				al += wk * int32(px[3])
			}
			o := out[4*j : 4*j+4 : 4*j+4]
			o[0] = uint16((r + 32) >> 6)
			o[1] = uint16((g + 32) >> 6)
			o[2] = uint16((b + 32) >> 6)
			o[3] = uint16((al + 32) >> 6)
		}
	default:
		for j := range first {
			base := int(first[j]) * n
			ww := w[j*t : j*t+t]
			for c := 0; c < n; c++ {
				var s int32
				for k, wk := range ww {
					s += wk * int32(src[base+k*n+c])
				}
				out[j*n+c] = uint16((s + 32) >> 6)
			}
		}
	}
}

// plane is a source of rows of n-channel 8-bit samples: sw x sh samples, each covering fx x fy
// image pixels. row returns row y; it may use buf (len >= sw*n) or return the source's memory.
type plane struct {
	sw, sh, n, fx, fy int
	row               func(y int, buf []uint8) []uint8
}

// resizePlane area-averages p, a plane of an image W x H pixels, to dw x dh samples of n
// channels, written to dst with stride dstride.
func resizePlane(p plane, W, H, dw, dh int, dst []uint8, dstride int) {
	hx := newHpass(newAxis(W, p.sw, p.fx, dw), p.sw, p.n)
	vy := newAxis(H, p.sh, p.fy, dh)
	n := p.n
	buf := make([]uint8, p.sw*n)
	// Horizontally resampled rows, kept in a ring keyed by source row: a destination row needs at
	// most tv of them, and consecutive destination rows share at most their boundary row, so each
	// source row is resampled once.
	tv := 1
	for j := 0; j < dh; j++ {
		tv = max(tv, int(vy.off[j+1]-vy.off[j]))
	}
	ring := make([][]uint16, tv+1)
	have := make([]int, tv+1)
	for k := range ring {
		ring[k], have[k] = make([]uint16, dw*n), -1
	}
	hrow := func(y int) []uint16 {
		k := y % len(ring)
		if have[k] != y {
			hx.apply(p.row(y, buf), ring[k])
			have[k] = y
		}
		return ring[k]
	}
	rows := make([][]uint16, 0, tv)
	ws := make([]uint32, 0, tv)
	var acc []uint32
	for j := 0; j < dh; j++ {
		rows, ws = rows[:0], ws[:0]
		y0 := int(vy.first[j])
		for k, w := range vy.w[vy.off[j]:vy.off[j+1]] {
			if w != 0 {
				rows, ws = append(rows, hrow(y0+k)), append(ws, uint32(w))
			}
		}
		out := dst[j*dstride : j*dstride+dw*n]
		if acc == nil && len(rows) > 3 {
			acc = make([]uint32, dw*n)
		}
		vpass(out, rows, ws, acc)
	}
}

// vpass writes one destination row: the weighted sum of the horizontally resampled rows (8.8
// fixed point times 14-bit weights that sum to 1<<14), rounded to 8 bits. One, two and three rows
// (every ratio down to 1/2) are summed in one pass over the row; more go through acc.
func vpass(out []uint8, rows [][]uint16, ws []uint32, acc []uint32) {
	const round = 1 << 21
	switch len(rows) {
	case 1:
		h := rows[0][:len(out)]
		w := ws[0]
		for i := range out {
			out[i] = uint8((w*uint32(h[i]) + round) >> 22)
		}
	case 2:
		h0, h1 := rows[0][:len(out)], rows[1][:len(out)]
		w0, w1 := ws[0], ws[1]
		for i := range out {
			out[i] = uint8((w0*uint32(h0[i]) + w1*uint32(h1[i]) + round) >> 22)
		}
	case 3:
		h0, h1, h2 := rows[0][:len(out)], rows[1][:len(out)], rows[2][:len(out)]
		w0, w1, w2 := ws[0], ws[1], ws[2]
		for i := range out {
			out[i] = uint8((w0*uint32(h0[i]) + w1*uint32(h1[i]) + w2*uint32(h2[i]) + round) >> 22)
		}
	default:
		acc = acc[:len(out)]
		clear(acc)
		for k, h := range rows {
			w := ws[k]
			h = h[:len(acc)]
			for i := range acc {
				acc[i] += w * uint32(h[i])
			}
		}
		for i, v := range acc {
			out[i] = uint8((v + round) >> 22)
		}
	}
}

// direct returns a row function over 8-bit memory.
func direct(pix []uint8, stride, rowLen int) func(int, []uint8) []uint8 {
	return func(y int, _ []uint8) []uint8 { return pix[y*stride : y*stride+rowLen] }
}

// resize area-averages m to dw x dh. The result is *image.YCbCr (4:2:0 for even sizes, else
// 4:4:4) for a YCbCr source,
// *image.Gray for a gray one, else *image.RGBA (premultiplied, as averaging needs).
func resize(m image.Image, dw, dh int) image.Image {
	b := m.Bounds()
	W, H := b.Dx(), b.Dy()
	switch s := m.(type) {
	case *image.YCbCr:
		fx, fy, ok := subsampling(s.SubsampleRatio)
		if ok && b.Min == (image.Point{}) {
			// Even sizes get 4:2:0 chroma straight away (each chroma sample the average of the
			// 2x2 pixels it covers, which is what the JPEG encoder would compute from 4:4:4),
			// a quarter of the chroma work; odd sizes get 4:4:4.
			ratio, cdw, cdh := image.YCbCrSubsampleRatio444, dw, dh
			if dw%2 == 0 && dh%2 == 0 {
				ratio, cdw, cdh = image.YCbCrSubsampleRatio420, dw/2, dh/2
			}
			out := image.NewYCbCr(image.Rect(0, 0, dw, dh), ratio)
			resizePlane(plane{W, H, 1, 1, 1, direct(s.Y, s.YStride, W)}, W, H, dw, dh, out.Y, out.YStride)
			cw, ch := (W+fx-1)/fx, (H+fy-1)/fy
			resizePlane(plane{cw, ch, 1, fx, fy, direct(s.Cb, s.CStride, cw)}, W, H, cdw, cdh, out.Cb, out.CStride)
			resizePlane(plane{cw, ch, 1, fx, fy, direct(s.Cr, s.CStride, cw)}, W, H, cdw, cdh, out.Cr, out.CStride)
			return out
		}
	case *image.Gray:
		out := image.NewGray(image.Rect(0, 0, dw, dh))
		resizePlane(plane{W, H, 1, 1, 1, func(y int, _ []uint8) []uint8 {
			i := s.PixOffset(b.Min.X, b.Min.Y+y)
			return s.Pix[i : i+W]
		}}, W, H, dw, dh, out.Pix, out.Stride)
		return out
	case *image.Gray16:
		out := image.NewGray(image.Rect(0, 0, dw, dh))
		resizePlane(plane{W, H, 1, 1, 1, func(y int, buf []uint8) []uint8 {
			i := s.PixOffset(b.Min.X, b.Min.Y+y)
			src := s.Pix[i : i+2*W]
			for x := range buf[:W] {
				buf[x] = src[2*x] // the high byte
			}
			return buf[:W]
		}}, W, H, dw, dh, out.Pix, out.Stride)
		return out
	}
	out := image.NewRGBA(image.Rect(0, 0, dw, dh))
	resizePlane(plane{W, H, 4, 1, 1, rgbaRows(m)}, W, H, dw, dh, out.Pix, out.Stride)
	return out
}

// subsampling returns how many image pixels one chroma sample covers, across and down.
func subsampling(r image.YCbCrSubsampleRatio) (fx, fy int, ok bool) {
	switch r {
	case image.YCbCrSubsampleRatio444:
		return 1, 1, true
	case image.YCbCrSubsampleRatio422:
		return 2, 1, true
	case image.YCbCrSubsampleRatio420:
		return 2, 2, true
	case image.YCbCrSubsampleRatio440:
		return 1, 2, true
	case image.YCbCrSubsampleRatio411:
		return 4, 1, true
	case image.YCbCrSubsampleRatio410:
		return 4, 2, true
	}
	return 0, 0, false
}

// rgbaRows returns a row function that reads m as premultiplied 8-bit RGBA, with a fast path per
// stdlib type and At as the fallback for the rest.
func rgbaRows(m image.Image) func(int, []uint8) []uint8 {
	b := m.Bounds()
	W := b.Dx()
	switch s := m.(type) {
	case *image.RGBA:
		return func(y int, _ []uint8) []uint8 {
			i := s.PixOffset(b.Min.X, b.Min.Y+y)
			return s.Pix[i : i+4*W]
		}
	case *image.NRGBA:
		return func(y int, buf []uint8) []uint8 {
			i := s.PixOffset(b.Min.X, b.Min.Y+y)
			premultiply(buf[:4*W], s.Pix[i:i+4*W])
			return buf[:4*W]
		}
	case *image.RGBA64:
		return func(y int, buf []uint8) []uint8 {
			i := s.PixOffset(b.Min.X, b.Min.Y+y)
			src := s.Pix[i : i+8*W]
			for k := range buf[:4*W] {
				buf[k] = src[2*k]
			}
			return buf[:4*W]
		}
	case *image.NRGBA64:
		return func(y int, buf []uint8) []uint8 {
			i := s.PixOffset(b.Min.X, b.Min.Y+y)
			src := s.Pix[i : i+8*W]
			for x := 0; x < W; x++ {
				p := src[8*x : 8*x+8]
				a := uint32(p[6])<<8 | uint32(p[7])
				for c := 0; c < 3; c++ {
					v := uint32(p[2*c])<<8 | uint32(p[2*c+1])
					buf[4*x+c] = uint8(v * a / 0xffff >> 8)
				}
				buf[4*x+3] = p[6]
			}
			return buf[:4*W]
		}
	case *image.Paletted:
		var pal [256][4]uint8 // indices past the palette read as transparent black
		for i, c := range s.Palette {
			if i == 256 {
				break
			}
			r, g, bb, a := c.RGBA()
			pal[i] = [4]uint8{uint8(r >> 8), uint8(g >> 8), uint8(bb >> 8), uint8(a >> 8)}
		}
		return func(y int, buf []uint8) []uint8 {
			i := s.PixOffset(b.Min.X, b.Min.Y+y)
			for x, idx := range s.Pix[i : i+W] {
				copy(buf[4*x:4*x+4], pal[idx][:])
			}
			return buf[:4*W]
		}
	case *image.CMYK:
		return func(y int, buf []uint8) []uint8 {
			i := s.PixOffset(b.Min.X, b.Min.Y+y)
			src := s.Pix[i : i+4*W]
			for x := 0; x < W; x++ {
				p := src[4*x : 4*x+4 : 4*x+4]
				r, g, bb := color.CMYKToRGB(p[0], p[1], p[2], p[3])
				o := buf[4*x : 4*x+4 : 4*x+4]
				o[0], o[1], o[2], o[3] = r, g, bb, 255
			}
			return buf[:4*W]
		}
	case *image.YCbCr: // only an odd subsampling or origin reaches here
		return func(y int, buf []uint8) []uint8 {
			for x := 0; x < W; x++ {
				yi := s.YOffset(b.Min.X+x, b.Min.Y+y)
				ci := s.COffset(b.Min.X+x, b.Min.Y+y)
				r, g, bb := color.YCbCrToRGB(s.Y[yi], s.Cb[ci], s.Cr[ci])
				o := buf[4*x : 4*x+4 : 4*x+4]
				o[0], o[1], o[2], o[3] = r, g, bb, 255
			}
			return buf[:4*W]
		}
	}
	return func(y int, buf []uint8) []uint8 {
		for x := 0; x < W; x++ {
			r, g, bb, a := m.At(b.Min.X+x, b.Min.Y+y).RGBA()
			o := buf[4*x : 4*x+4 : 4*x+4]
			o[0], o[1], o[2], o[3] = uint8(r>>8), uint8(g>>8), uint8(bb>>8), uint8(a>>8)
		}
		return buf[:4*W]
	}
}

// premultiply writes src (non-premultiplied RGBA) to dst premultiplied, rounding c*a/255.
func premultiply(dst, src []uint8) {
	for x := 0; x+3 < len(src); x += 4 {
		p := src[x : x+4 : x+4]
		o := dst[x : x+4 : x+4]
		a := uint32(p[3])
		if a == 255 {
			o[0], o[1], o[2], o[3] = p[0], p[1], p[2], 255
			continue
		}
		for c := 0; c < 3; c++ {
			t := uint32(p[c])*a + 128
			o[c] = uint8((t + t>>8) >> 8)
		}
		o[3] = p[3]
	}
}
