package jpeg

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	stdjpeg "image/jpeg"
	"image/png"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// This file holds what the tests share: the images they encode, and the comparison of this
// package's Decode with image/jpeg's.

// photoImage is photo-like: smooth gradients and large waves, a few hard edges, fine texture
// and Gaussian sensor noise of standard deviation sigma.
func photoImage(w, h int, seed uint64, sigma float64) *image.RGBA {
	r := rand.New(rand.NewPCG(seed, 1))
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	cx, cy, rad := float64(w)*0.6, float64(h)*0.4, float64(min(w, h))*0.25
	for y := 0; y < h; y++ {
		fy := float64(y) / float64(max(h, 1))
		for x := 0; x < w; x++ {
			fx := float64(x) / float64(max(w, 1))
			base := 30 + 160*fx*fy + 25*math.Sin(fx*9+fy*4)*math.Cos(fy*7)
			tex := 6 * math.Sin(float64(x)*0.9) * math.Sin(float64(y)*0.7)
			dx, dy := float64(x)-cx, float64(y)-cy
			disc := 0.0
			if dx*dx+dy*dy < rad*rad {
				disc = 50
			}
			if x > w*3/4 && y > h/8 && y < h/3 {
				disc -= 40 // a dark rectangle
			}
			n := r.NormFloat64() * sigma
			m.Pix[m.PixOffset(x, y)+0] = clamp8(base + disc + tex + n)
			m.Pix[m.PixOffset(x, y)+1] = clamp8(base*0.8 + 40*fy + disc/2 + tex + n)
			m.Pix[m.PixOffset(x, y)+2] = clamp8(200 - base*0.6 + tex/2 + n - disc/3)
			m.Pix[m.PixOffset(x, y)+3] = 255
		}
	}
	return m
}

func clamp8(v float64) uint8 { return uint8(max(0, min(255, math.Round(v)))) }

// screenImage is screenshot-like: flat panels, 1-pixel strokes and a coloured title bar.
func screenImage(w, h int) *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := color.NRGBA{250, 250, 252, 255}
			switch {
			case y < h/10:
				c = color.NRGBA{40, 90, 200, 255}
			case x < w/4:
				c = color.NRGBA{236, 238, 242, 255}
			case y%11 == 5 && x%60 < 41, x%13 == 2 && y%40 < 9:
				c = color.NRGBA{20, 20, 30, 255}
			}
			m.SetNRGBA(x, y, c)
		}
	}
	return m
}

// grayOf and ycbcrOf give the image as the Go encoder's other input types.
func grayOf(m image.Image) *image.Gray {
	g := image.NewGray(m.Bounds())
	for y := m.Bounds().Min.Y; y < m.Bounds().Max.Y; y++ {
		for x := m.Bounds().Min.X; x < m.Bounds().Max.X; x++ {
			g.Set(x, y, m.At(x, y))
		}
	}
	return g
}

func ycbcrOf(m image.Image, ratio image.YCbCrSubsampleRatio) *image.YCbCr {
	b := m.Bounds()
	out := image.NewYCbCr(b, ratio)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := m.At(x, y).RGBA()
			yy, cb, cr := color.RGBToYCbCr(uint8(r>>8), uint8(g>>8), uint8(bl>>8))
			out.Y[out.YOffset(x, y)] = yy
			out.Cb[out.COffset(x, y)] = cb
			out.Cr[out.COffset(x, y)] = cr
		}
	}
	return out
}

func encodePNGFor(t testing.TB, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encode(t testing.TB, m image.Image, q int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := stdjpeg.Encode(&b, m, &stdjpeg.Options{Quality: q}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// decodeBoth decodes data with both decoders, each from a reader made by newReader, turning a
// panic into an error that says so.
func decodeBoth(data []byte, newReader func([]byte) io.Reader) (want, got image.Image, werr, gerr error) {
	run := func(dec func(io.Reader) (image.Image, error)) (m image.Image, err error) {
		defer func() {
			if r := recover(); r != nil {
				m, err = nil, fmt.Errorf("PANIC: %v", r)
			}
		}()
		return dec(newReader(data))
	}
	want, werr = run(stdjpeg.Decode)
	got, gerr = run(Decode)
	return
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// checkSame fails t unless Decode does with data exactly what image/jpeg.Decode does: the
// same error text, or images of the same type, bounds, subsampling, strides and pixel bytes
// (the whole buffers, so also the padding of partial MCUs). It reports whether both decoded.
func checkSame(t testing.TB, name string, data []byte) bool {
	t.Helper()
	return checkSameReader(t, name, data, bytesReader)
}

func checkSameReader(t testing.TB, name string, data []byte, newReader func([]byte) io.Reader) bool {
	t.Helper()
	want, got, werr, gerr := decodeBoth(data, newReader)
	if werr != nil && len(werr.Error()) > 6 && werr.Error()[:6] == "PANIC:" {
		t.Logf("%s: image/jpeg panics (%v); not compared", name, werr)
		return false
	}
	if gerr != nil && len(gerr.Error()) > 6 && gerr.Error()[:6] == "PANIC:" {
		t.Errorf("%s: %v", name, gerr)
		return false
	}
	if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
		t.Errorf("%s: error %v, image/jpeg's %v", name, gerr, werr)
		return false
	}
	if werr != nil {
		return false
	}
	if d := imageDiff(want, got); d != "" {
		t.Errorf("%s: %s", name, d)
		return false
	}
	return true
}

// imageDiff says how got differs from want, or "" when they are the same.
func imageDiff(want, got image.Image) string {
	if fmt.Sprintf("%T", want) != fmt.Sprintf("%T", got) {
		return fmt.Sprintf("type %T, want %T", got, want)
	}
	if want.Bounds() != got.Bounds() {
		return fmt.Sprintf("bounds %v, want %v", got.Bounds(), want.Bounds())
	}
	type plane struct {
		name   string
		w, g   []byte
		ws, gs int
	}
	var planes []plane
	switch w := want.(type) {
	case *image.YCbCr:
		g := got.(*image.YCbCr)
		if w.SubsampleRatio != g.SubsampleRatio {
			return fmt.Sprintf("subsampling %v, want %v", g.SubsampleRatio, w.SubsampleRatio)
		}
		planes = []plane{{"Y", w.Y, g.Y, w.YStride, g.YStride}, {"Cb", w.Cb, g.Cb, w.CStride, g.CStride},
			{"Cr", w.Cr, g.Cr, w.CStride, g.CStride}}
	case *image.Gray:
		g := got.(*image.Gray)
		planes = []plane{{"Pix", w.Pix, g.Pix, w.Stride, g.Stride}}
	case *image.RGBA:
		g := got.(*image.RGBA)
		planes = []plane{{"Pix", w.Pix, g.Pix, w.Stride, g.Stride}}
	case *image.CMYK:
		g := got.(*image.CMYK)
		planes = []plane{{"Pix", w.Pix, g.Pix, w.Stride, g.Stride}}
	default:
		return fmt.Sprintf("unexpected type %T", want)
	}
	for _, p := range planes {
		if p.ws != p.gs {
			return fmt.Sprintf("%s stride %d, want %d", p.name, p.gs, p.ws)
		}
		if len(p.w) != len(p.g) {
			return fmt.Sprintf("%s has %d bytes, want %d", p.name, len(p.g), len(p.w))
		}
		if !bytes.Equal(p.w, p.g) {
			i := 0
			for p.w[i] == p.g[i] {
				i++
			}
			return fmt.Sprintf("%s differs first at byte %d (row %d): %d, want %d", p.name, i, i/max(p.ws, 1), p.g[i], p.w[i])
		}
	}
	return ""
}

// files returns the JPEG files under the repository the tests decode: this package's testdata
// (progressive, restart and other kinds the Go encoder does not make), shrink's (one per
// subsampling, grayscale, CMYK) and the project's samples. It fails when any set is missing.
func files(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, g := range []struct {
		glob string
		min  int
	}{{"testdata/*.jpeg", 14}, {"../../testdata/*.jpeg", 8}, {"../../../testdata/samples/*.jpg", 2}} {
		names, _ := filepath.Glob(g.glob)
		if len(names) < g.min {
			t.Fatalf("%s: %d files, want at least %d", g.glob, len(names), g.min)
		}
		for _, n := range names {
			b, err := os.ReadFile(n)
			if err != nil {
				t.Fatal(err)
			}
			out[n] = b
		}
	}
	return out
}

// ycck is the CMYK test file marked YCbCrK (Adobe transform 2), which decodes through the
// other branch of applyBlack.
func ycck(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("../../testdata/video-001.cmyk.jpeg")
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte("\xff\xee\x00\x0eAdobe"))
	if i < 0 {
		t.Fatal("no Adobe APP14 segment in video-001.cmyk.jpeg")
	}
	b = bytes.Clone(b)
	b[i+4+11] = 2
	return b
}
