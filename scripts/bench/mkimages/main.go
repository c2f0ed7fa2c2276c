// Command mkimages makes the images that scripts/bench/shrink.sh measures: photo-like JPEGs
// (gradients, texture and noise, so that they compress like camera pictures) and UI-like PNG
// screenshots (flat panels with 1-pixel text-like strokes). Every third photo carries EXIF
// orientation 6, as a phone held upright writes it. The output is deterministic for a given seed.
//
//	go run ./scripts/bench/mkimages -out DIR -photos 30 -shots 50
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
)

func main() {
	out := flag.String("out", "images", "folder to write into")
	photos := flag.Int("photos", 30, "photos to make (4032x3024 JPEG)")
	shots := flag.Int("shots", 50, "screenshots to make (2560x1600 PNG)")
	pw := flag.Int("photo-size", 4032, "photo width (height is 3/4 of it)")
	sw := flag.Int("shot-size", 2560, "screenshot width (height is 5/8 of it)")
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fatal(err)
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	run := func(f func() error) {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := f(); err != nil {
				fatal(err)
			}
		}()
	}
	for i := 0; i < *photos; i++ {
		i := i
		run(func() error {
			orient := 0
			if i%3 == 2 {
				orient = 6
			}
			return writePhoto(filepath.Join(*out, fmt.Sprintf("photo-%02d.jpg", i)), *pw, *pw*3/4, uint64(i), orient)
		})
	}
	for i := 0; i < *shots; i++ {
		i := i
		run(func() error {
			return writeShot(filepath.Join(*out, fmt.Sprintf("shot-%02d.png", i)), *sw, *sw*5/8, uint64(i))
		})
	}
	wg.Wait()
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "mkimages:", err)
	os.Exit(1)
}

// Photo makes a photo-like picture: smooth colour gradients, a few soft blobs, fine texture and
// per-pixel noise, in YCbCr 4:2:0 as a camera writes it.
func Photo(w, h int, seed uint64) *image.YCbCr {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	m := image.NewYCbCr(image.Rect(0, 0, w, h), image.YCbCrSubsampleRatio420)
	type blob struct{ x, y, r, dy float64 }
	blobs := make([]blob, 12)
	for i := range blobs {
		blobs[i] = blob{r.Float64() * float64(w), r.Float64() * float64(h), (0.05 + 0.2*r.Float64()) * float64(w), 60*r.Float64() - 30}
	}
	fx, fy := 0.01+0.03*r.Float64(), 0.01+0.03*r.Float64()
	base := 80 + 60*r.Float64()
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			v := base + 50*float64(y)/float64(h) + 8*math.Sin(float64(x)*fx)*math.Cos(float64(y)*fy)
			for _, b := range blobs[:4] {
				dx, dy := float64(x)-b.x, float64(y)-b.y
				if d := dx*dx + dy*dy; d < b.r*b.r {
					v += b.dy * (1 - d/(b.r*b.r))
				}
			}
			v += r.NormFloat64() * 6
			m.Y[y*m.YStride+x] = clamp(v)
		}
	}
	cw, ch := (w+1)/2, (h+1)/2
	for y := 0; y < ch; y++ {
		for x := 0; x < cw; x++ {
			fxp, fyp := float64(x)/float64(cw), float64(y)/float64(ch)
			m.Cb[y*m.CStride+x] = clamp(128 + 30*fxp - 20*fyp + r.NormFloat64()*2)
			m.Cr[y*m.CStride+x] = clamp(128 - 25*fxp + 15*math.Sin(fyp*6) + r.NormFloat64()*2)
		}
	}
	return m
}

func clamp(v float64) uint8 {
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return uint8(v + 0.5)
}

func writePhoto(path string, w, h int, seed uint64, orient int) error {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, Photo(w, h, seed), &jpeg.Options{Quality: 92}); err != nil {
		return err
	}
	b := buf.Bytes()
	if orient != 0 {
		b = WithOrientation(b, orient)
	}
	return os.WriteFile(path, b, 0o644)
}

// WithOrientation inserts an EXIF APP1 segment carrying orientation o right after the JPEG's SOI.
func WithOrientation(jpg []byte, o int) []byte {
	var tiff bytes.Buffer
	tiff.WriteString("MM\x00\x2a")
	binary.Write(&tiff, binary.BigEndian, uint32(8))      // IFD0 offset
	binary.Write(&tiff, binary.BigEndian, uint16(1))      // one entry
	binary.Write(&tiff, binary.BigEndian, uint16(0x0112)) // Orientation
	binary.Write(&tiff, binary.BigEndian, uint16(3))      // SHORT
	binary.Write(&tiff, binary.BigEndian, uint32(1))      // count
	binary.Write(&tiff, binary.BigEndian, uint16(o))      // value
	binary.Write(&tiff, binary.BigEndian, uint16(0))      // padding
	binary.Write(&tiff, binary.BigEndian, uint32(0))      // no next IFD
	payload := append([]byte("Exif\x00\x00"), tiff.Bytes()...)
	seg := []byte{0xFF, 0xE1, byte((len(payload) + 2) >> 8), byte(len(payload) + 2)}
	out := append([]byte{}, jpg[:2]...)
	out = append(out, seg...)
	out = append(out, payload...)
	return append(out, jpg[2:]...)
}

// Shot makes a UI-like screenshot: a title bar, a sidebar, panels and rows of "text", strokes
// one pixel wide in dark grey on light backgrounds, as a code editor or chat window shows them.
func Shot(w, h int, seed uint64) *image.NRGBA {
	r := rand.New(rand.NewPCG(seed, 0x51ed2701))
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	fill := func(x0, y0, x1, y1 int, c color.NRGBA) {
		for y := max(y0, 0); y < min(y1, h); y++ {
			row := m.Pix[y*m.Stride:]
			for x := max(x0, 0); x < min(x1, w); x++ {
				copy(row[4*x:4*x+4], []uint8{c.R, c.G, c.B, c.A})
			}
		}
	}
	bg := color.NRGBA{250, 250, 252, 255}
	fill(0, 0, w, h, bg)
	fill(0, 0, w, 48, color.NRGBA{40, 44, 52, 255})
	side := w / 6
	fill(0, 48, side, h, color.NRGBA{235, 237, 240, 255})
	panels := []color.NRGBA{{255, 255, 255, 255}, {245, 248, 255, 255}, {255, 250, 240, 255}}
	y := 64
	for y < h-40 {
		ph := 120 + r.IntN(300)
		c := panels[r.IntN(len(panels))]
		fill(side+16, y, w-16, min(y+ph, h-16), c)
		fill(side+16, y, w-16, y+1, color.NRGBA{210, 212, 218, 255})
		text(m, side+32, y+16, w-48, min(y+ph, h-16)-8, r)
		y += ph + 16
	}
	text(m, 12, 64, side-12, h-8, r)
	return m
}

// text draws lines of glyph-like marks: 7 px tall cells with 1 px strokes, 12 px line pitch.
func text(m *image.NRGBA, x0, y0, x1, y1 int, r *rand.Rand) {
	ink := color.NRGBA{30, 30, 36, 255}
	if r.IntN(4) == 0 {
		ink = color.NRGBA{20, 90, 200, 255}
	}
	set := func(x, y int) {
		if image.Pt(x, y).In(m.Rect) {
			i := m.PixOffset(x, y)
			m.Pix[i], m.Pix[i+1], m.Pix[i+2], m.Pix[i+3] = ink.R, ink.G, ink.B, ink.A
		}
	}
	for y := y0; y+9 < y1; y += 14 {
		x := x0
		end := x0 + r.IntN(max(1, x1-x0))
		for x+6 < end {
			word := 2 + r.IntN(8)
			for i := 0; i < word && x+6 < end; i++ {
				g := r.Uint32()
				for k := 0; k < 7; k++ { // vertical strokes
					if g&(1<<k) != 0 {
						set(x+(k%3)*2, y+k)
						set(x+(k%3)*2, y+k+1)
					}
				}
				for k := 0; k < 5; k++ { // horizontal strokes
					if g&(1<<(8+k)) != 0 {
						set(x+k, y+(k%3)*3)
					}
				}
				x += 7
			}
			x += 5
		}
	}
}

func writeShot(path string, w, h int, seed uint64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	if err := png.Encode(bw, Shot(w, h, seed)); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
