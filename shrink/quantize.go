package shrink

import (
	"image"
	"image/color"
	"sort"
)

// quantize turns an opaque RGBA image into a paletted one of at most 256 colours, for a flat
// image whose truecolour PNG is over --max-bytes. When the image has at most 256 colours the
// palette is exact and nothing is lost. Otherwise colours are put in 32768 bins (5 bits a
// channel), the 256 fullest bins become the palette (each the mean of its pixels, so a flat
// background keeps its colour), and every pixel takes the palette entry nearest its bin's mean.
// Screenshots are a few flat colours plus their anti-aliased blends, which this keeps well.
func quantize(m *image.RGBA) (p *image.Paletted, exact bool) {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	out := image.NewPaletted(image.Rect(0, 0, w, h), nil)
	// Exact: at most 256 colours.
	colours := make(map[uint32]uint8, 257)
	last, lastI := uint32(1<<24), uint8(0) // runs of one colour (most of a screenshot) skip the map
	for y := 0; y < h && colours != nil; y++ {
		row := m.Pix[y*m.Stride : y*m.Stride+4*w]
		for x := 0; x < w; x++ {
			p := row[4*x : 4*x+3 : 4*x+3]
			c := uint32(p[0])<<16 | uint32(p[1])<<8 | uint32(p[2])
			if c == last {
				out.Pix[y*out.Stride+x] = lastI
				continue
			}
			i, ok := colours[c]
			if !ok {
				if len(colours) == 256 {
					colours = nil
					break
				}
				i = uint8(len(colours))
				colours[c] = i
				out.Palette = append(out.Palette, color.RGBA{p[0], p[1], p[2], 255})
			}
			out.Pix[y*out.Stride+x] = i
			last, lastI = c, i
		}
	}
	if colours != nil {
		return out, true
	}
	type bin struct {
		n          int
		r, g, b    int
		cr, cg, cb uint8
		idx        int16
	}
	bins := make([]bin, 1<<15)
	key := func(p []uint8) int { return int(p[0]>>3)<<10 | int(p[1]>>3)<<5 | int(p[2]>>3) }
	for y := 0; y < h; y++ {
		row := m.Pix[y*m.Stride : y*m.Stride+4*w]
		for x := 0; x < w; x++ {
			p := row[4*x : 4*x+3 : 4*x+3]
			b := &bins[key(p)]
			b.n++
			b.r += int(p[0])
			b.g += int(p[1])
			b.b += int(p[2])
		}
	}
	var used []int
	for k := range bins {
		if b := &bins[k]; b.n > 0 {
			b.cr, b.cg, b.cb = uint8((b.r+b.n/2)/b.n), uint8((b.g+b.n/2)/b.n), uint8((b.b+b.n/2)/b.n)
			used = append(used, k)
		}
	}
	sort.Slice(used, func(i, j int) bool { return bins[used[i]].n > bins[used[j]].n })
	pal := used[:min(256, len(used))]
	out.Palette = out.Palette[:0]
	for _, k := range pal {
		b := bins[k]
		out.Palette = append(out.Palette, color.RGBA{b.cr, b.cg, b.cb, 255})
	}
	for _, k := range used {
		b := &bins[k]
		best, bd := 0, 1<<30
		for i, c := range out.Palette {
			pc := c.(color.RGBA)
			dr, dg, db := int(b.cr)-int(pc.R), int(b.cg)-int(pc.G), int(b.cb)-int(pc.B)
			if d := 2*dr*dr + 4*dg*dg + db*db; d < bd {
				best, bd = i, d
			}
		}
		b.idx = int16(best)
	}
	for y := 0; y < h; y++ {
		row := m.Pix[y*m.Stride : y*m.Stride+4*w]
		orow := out.Pix[y*out.Stride : y*out.Stride+w]
		for x := range orow {
			orow[x] = uint8(bins[key(row[4*x:4*x+3])].idx)
		}
	}
	return out, false
}
