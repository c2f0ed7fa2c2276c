package shrink

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/draw"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/zeebo/blake3"
	"golang.org/x/image/bmp"
)

// ---- images the tests make ----

// photo is photo-like: gradients, texture and noise.
// The pixels are written straight into Pix, with the sines and cosines of a row and a column
// taken once: under -race every call and every SetRGBA is instrumented, and the tests make
// millions of pixels.
func photo(w, h int, seed uint64) *image.RGBA {
	r := rand.New(rand.NewPCG(seed, 7))
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	sin := make([]float64, w)
	for x := range sin {
		sin[x] = 10 * math.Sin(float64(x)/7)
	}
	for y := 0; y < h; y++ {
		cos := math.Cos(float64(y) / 11)
		row := m.Pix[y*m.Stride : y*m.Stride+4*w]
		for x := 0; x < w; x++ {
			n := r.NormFloat64() * 6
			t := sin[x] * cos
			row[4*x] = clamp8(40 + 150*float64(x)/float64(w) + n + t)
			row[4*x+1] = clamp8(60 + 120*float64(y)/float64(h) + n - t)
			row[4*x+2] = clamp8(120 + n + t/2)
			row[4*x+3] = 255
		}
	}
	return m
}

func clamp8(v float64) uint8 {
	r := math.Round(v)
	if r < 0 {
		return 0
	}
	if r > 255 {
		return 255
	}
	return uint8(r)
}

// screenshot is flat: light panels with 1-pixel dark strokes.
func screenshot(w, h int) *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		row := m.Pix[y*m.Stride : y*m.Stride+4*w]
		for x := 0; x < w; x++ {
			c := [4]uint8{245, 246, 248, 255}
			if x > w/5 {
				c = [4]uint8{255, 255, 255, 255}
			}
			if y%9 == 4 && x%50 < 37 || x%9 == 3 && y%50 < 7 {
				c = [4]uint8{30, 30, 40, 255}
			}
			copy(row[4*x:4*x+4], c[:])
		}
	}
	return m
}

func encodePNG(t testing.TB, m image.Image) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodeJPEG(t testing.TB, m image.Image, q int) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, m, &jpeg.Options{Quality: q}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// withExif puts an EXIF APP1 segment with orientation o right after the JPEG's SOI.
func withExif(jpg []byte, o int) []byte {
	tiff := []byte{'I', 'I', 42, 0, 8, 0, 0, 0, 1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0, byte(o), 0, 0, 0, 0, 0, 0, 0}
	payload := append([]byte("Exif\x00\x00"), tiff...)
	seg := []byte{0xFF, 0xE1, byte((len(payload) + 2) >> 8), byte(len(payload) + 2)}
	out := append(append(append([]byte{}, jpg[:2]...), seg...), payload...)
	return append(out, jpg[2:]...)
}

// pngBomb is a tiny PNG whose header claims w x h pixels.
func pngBomb(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		binary.Write(&b, binary.BigEndian, uint32(len(data)))
		b.WriteString(typ)
		b.Write(data)
		binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(append([]byte(typ), data...)))
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr, w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 2
	chunk("IHDR", ihdr)
	chunk("IDAT", []byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})
	chunk("IEND", nil)
	return b.Bytes()
}

func animatedGIF(t testing.TB) []byte {
	pal := color.Palette{color.Black, color.White}
	g := &gif.GIF{}
	for i := 0; i < 3; i++ {
		f := image.NewPaletted(image.Rect(0, 0, 30, 20), pal)
		f.Pix[i] = 1
		g.Image = append(g.Image, f)
		g.Delay = append(g.Delay, 10)
	}
	var b bytes.Buffer
	if err := gif.EncodeAll(&b, g); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// record writes data to dir/name and returns an image record for it, as sniff makes one.
func record(t testing.TB, dir, name string, data []byte) *manifest.Record {
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	rec := &manifest.Record{Path: p, Name: name, Kind: manifest.KindImage, Mime: "image/x"}
	rec.SetSize(int64(len(data)))
	return rec
}

func decodeFile(t testing.TB, path string) (image.Image, string) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, f, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m, f
}

// ---- the table ----

func TestRecordTable(t *testing.T) {
	// The tests that only shrink images and look at the pixels run in parallel: go test starts
	// them once the sequential tests, which watch the process's memory and its reservations,
	// have ended, and the package's minutes under -race then use every core.
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	var bmpBuf bytes.Buffer
	if err := bmp.Encode(&bmpBuf, screenshot(300, 200)); err != nil {
		t.Fatal(err)
	}
	alpha := image.NewNRGBA(image.Rect(0, 0, 1200, 150))
	for i := range alpha.Pix {
		alpha.Pix[i] = uint8(i % 251)
	}
	tests := []struct {
		name       string
		data       []byte
		opts       Options
		action     string
		mime       string // of the result; "" when the path must not change
		w, h       int
		reasonLike string
	}{
		{"screenshot.png", encodePNG(t, screenshot(2560, 1600)), Options{}, Resized, "image/png", 2000, 1250, "long edge 2560"},
		{"photo.jpg", encodeJPEG(t, photo(2400, 800, 1), 95), Options{}, Resized, "image/jpeg", 2000, 667, "long edge 2400"},
		{"photo-as.png", encodePNG(t, photo(700, 500, 2)), Options{}, Reencoded, "image/jpeg", 700, 500, "bytes over --max-bytes"},
		{"alpha.png", encodePNG(t, alpha), Options{MaxEdge: 1000, MaxBytes: 100_000}, Resized, "image/png", 0, 0, ""}, // noise: a smaller size to fit
		{"small.png", encodePNG(t, screenshot(300, 200)), Options{}, Kept, "", 300, 200, "within limits"},
		{"small.jpg", encodeJPEG(t, photo(640, 480, 3), 80), Options{}, Kept, "", 640, 480, "within limits"},
		{"diagram.bmp", bmpBuf.Bytes(), Options{}, Reencoded, "image/png", 300, 200, "BMP is not a format"},
		{"tight.jpg", encodeJPEG(t, photo(800, 600, 4), 95), Options{MaxBytes: 10_000}, Resized, "image/jpeg", 0, 0, ""},
		{"tight.png", encodePNG(t, screenshot(1200, 900)), Options{MaxBytes: 8_000}, Reencoded, "image/png", 1200, 900, "over --max-bytes"}, // fits on a palette
		{"edge.png", encodePNG(t, screenshot(450, 600)), Options{MaxEdge: 300}, Resized, "image/png", 225, 300, ""},
		{"bomb.png", pngBomb(100000, 100000), Options{}, AsIs, "", 0, 0, "over --max-pixels"},
		{"bomb-small-limit.jpg", encodeJPEG(t, photo(300, 300, 5), 80), Options{MaxPixels: 80_000}, AsIs, "", 0, 0, "over --max-pixels"},
		{"anim.gif", animatedGIF(t), Options{}, AsIs, "", 0, 0, "animated GIF"},
		{"heic.heic", []byte("\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic"), Options{}, AsIs, "", 0, 0, "no decoder for image/x"},
		{"garbage.png", append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0xA5}, 200)...), Options{}, AsIs, "", 0, 0, "undecodable"},
		{"truncated.jpg", encodeJPEG(t, photo(800, 600, 6), 90)[:20000], Options{MaxEdge: 500}, AsIs, "", 0, 0, "undecodable"},
		{"truncated.png", encodePNG(t, screenshot(800, 600))[:3000], Options{MaxEdge: 500}, AsIs, "", 0, 0, "undecodable"},
		{"empty.png", nil, Options{}, AsIs, "", 0, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := record(t, dir, tc.name, tc.data)
			orig := *rec
			opts := tc.opts
			opts.OutDir = out
			if err := Record(rec, opts); err != nil {
				t.Fatal(err)
			}
			if rec.Shrink == nil || rec.Shrink.Action != tc.action {
				t.Fatalf("shrink = %+v, want action %s", rec.Shrink, tc.action)
			}
			if tc.reasonLike != "" && !bytes.Contains([]byte(rec.Shrink.Reason), []byte(tc.reasonLike)) {
				t.Errorf("reason %q, want it to say %q", rec.Shrink.Reason, tc.reasonLike)
			}
			if tc.mime == "" && tc.action != Resized {
				if rec.Path != orig.Path || rec.Size != orig.Size {
					t.Fatalf("path/size changed for %s: %s %d", tc.action, rec.Path, rec.Size)
				}
				got, _ := os.ReadFile(rec.Path)
				if !bytes.Equal(got, tc.data) {
					t.Fatal("bytes of a kept/asis file changed")
				}
				return
			}
			opts = opts.withDefaults()
			// A written file: within both limits, of the stated type, size and hash.
			st, err := os.Stat(rec.Path)
			if err != nil {
				t.Fatal(err)
			}
			if st.Size() != rec.Size || rec.Size > opts.MaxBytes {
				t.Errorf("size %d (file %d), limit %d", rec.Size, st.Size(), opts.MaxBytes)
			}
			if filepath.Dir(rec.Path) != out {
				t.Errorf("written outside --out: %s", rec.Path)
			}
			m, format := decodeFile(t, rec.Path)
			if b := m.Bounds(); b.Dx() != rec.Width || b.Dy() != rec.Height || max(b.Dx(), b.Dy()) > opts.MaxEdge {
				t.Errorf("pixels %v, record %dx%d, max edge %d", b, rec.Width, rec.Height, opts.MaxEdge)
			}
			if tc.w != 0 && (rec.Width != tc.w || rec.Height != tc.h) {
				t.Errorf("size %dx%d, want %dx%d", rec.Width, rec.Height, tc.w, tc.h)
			}
			if tc.mime != "" && rec.Mime != tc.mime {
				t.Errorf("mime %s, want %s", rec.Mime, tc.mime)
			}
			if "image/"+format != rec.Mime {
				t.Errorf("file is %s, record says %s", format, rec.Mime)
			}
			wantName := tc.name[:len(tc.name)-len(filepath.Ext(tc.name))] + map[string]string{"image/png": ".png", "image/jpeg": ".jpg"}[rec.Mime]
			if rec.Name != wantName {
				t.Errorf("name %s, want %s", rec.Name, wantName)
			}
			if rec.Shrink.From == nil || rec.Shrink.From.Path != orig.Path || rec.Shrink.From.Size != int64(len(tc.data)) {
				t.Errorf("from = %+v", rec.Shrink.From)
			}
			data, _ := os.ReadFile(rec.Path)
			if sum := b3(data); sum != rec.Blake3 || len(rec.Blake3) != 64 {
				t.Errorf("blake3 %s, file's %s", rec.Blake3, sum)
			}
			if st.Mode().Perm() != 0o600 {
				t.Errorf("mode %v", st.Mode())
			}
		})
	}
}

// ---- orientation ----

// Each EXIF orientation names where the stored 0th row and 0th column go. The stored image has
// a red top-left pixel block and a green top-right one; after shrinking, red and green must be in
// the corners that orientation names, and the sides swapped for 5..8.
func TestOrientations(t *testing.T) {
	t.Parallel()           // pixels only: see TestRecordTable
	const W, H = 1200, 800 // stored; over the edge (1000 here), so resized
	stored := image.NewRGBA(image.Rect(0, 0, W, H))
	draw.Draw(stored, stored.Rect, image.NewUniform(color.RGBA{128, 128, 128, 255}), image.Point{}, draw.Src)
	draw.Draw(stored, image.Rect(0, 0, 100, 100), image.NewUniform(color.RGBA{255, 0, 0, 255}), image.Point{}, draw.Src)
	draw.Draw(stored, image.Rect(W-100, 0, W, 100), image.NewUniform(color.RGBA{0, 255, 0, 255}), image.Point{}, draw.Src)
	jpg := encodeJPEG(t, stored, 90)
	type corner int
	const (
		tl corner = iota
		tr
		br
		bl
	)
	want := map[int][2]corner{ // orientation: where red (stored top-left), green (stored top-right) go
		1: {tl, tr}, 2: {tr, tl}, 3: {br, bl}, 4: {bl, br},
		5: {tl, bl}, 6: {tr, br}, 7: {br, tr}, 8: {bl, tl},
	}
	dir := t.TempDir()
	for o := 1; o <= 8; o++ {
		for _, fromRecord := range []bool{true, false} {
			t.Run(fmt.Sprintf("%d/record=%v", o, fromRecord), func(t *testing.T) {
				rec := record(t, dir, fmt.Sprintf("o%d-%v.jpg", o, fromRecord), withExif(jpg, o))
				if fromRecord {
					rec.Orientation = o // as sniff sets it; else parsed from the file
				}
				if err := Record(rec, Options{OutDir: filepath.Join(dir, "out"), MaxEdge: 1000}); err != nil {
					t.Fatal(err)
				}
				if rec.Orientation != 0 {
					t.Error("orientation not cleared")
				}
				m, _ := decodeFile(t, rec.Path)
				b := m.Bounds()
				ww, wh := 1000, 667
				if o >= 5 {
					ww, wh = 667, 1000
				}
				if b.Dx() != ww || b.Dy() != wh {
					t.Fatalf("size %v, want %dx%d", b.Size(), ww, wh)
				}
				at := func(c corner) color.Color {
					x, y := 20, 20
					if c == tr || c == br {
						x = b.Dx() - 21
					}
					if c == bl || c == br {
						y = b.Dy() - 21
					}
					return m.At(x, y)
				}
				isRed := func(c color.Color) bool { r, g, _, _ := c.RGBA(); return r > 0xc000 && g < 0x4000 }
				isGreen := func(c color.Color) bool { r, g, _, _ := c.RGBA(); return g > 0xc000 && r < 0x4000 }
				if !isRed(at(want[o][0])) {
					t.Errorf("red not at corner %d: %v", want[o][0], at(want[o][0]))
				}
				if !isGreen(at(want[o][1])) {
					t.Errorf("green not at corner %d: %v", want[o][1], at(want[o][1]))
				}
			})
		}
	}
}

// ---- kept, cache, errors ----

func TestKeptByteIdenticalAndCache(t *testing.T) {
	t.Parallel() // pixels only: see TestRecordTable
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	small := encodePNG(t, screenshot(200, 100))
	rec := record(t, dir, "s.png", small)
	if err := Record(rec, Options{OutDir: out}); err != nil || rec.Shrink.Action != Kept {
		t.Fatalf("%v %+v", err, rec.Shrink)
	}
	if got, _ := os.ReadFile(rec.Path); !bytes.Equal(got, small) || rec.Path != filepath.Join(dir, "s.png") {
		t.Fatal("kept is not the same file, byte for byte")
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("kept wrote into --out")
	}

	big := encodeJPEG(t, photo(1100, 500, 9), 90)
	first := record(t, dir, "p.jpg", big)
	if err := Record(first, Options{OutDir: out, MaxEdge: 1000}); err != nil {
		t.Fatal(err)
	}
	st1, _ := os.Stat(first.Path)
	second := record(t, dir, "p.jpg", big)
	if err := Record(second, Options{OutDir: out, MaxEdge: 1000}); err != nil {
		t.Fatal(err)
	}
	st2, _ := os.Stat(second.Path)
	if second.Path != first.Path || second.Blake3 != first.Blake3 || !st1.ModTime().Equal(st2.ModTime()) || !os.SameFile(st1, st2) {
		t.Fatal("second run did not reuse the first's file")
	}
	// Other options: another file.
	third := record(t, dir, "p.jpg", big)
	if err := Record(third, Options{OutDir: out, MaxEdge: 500}); err != nil || third.Path == first.Path {
		t.Fatalf("other options reused %s (%v)", third.Path, err)
	}
	// A damaged cached file is not reused: it is made again.
	os.WriteFile(first.Path, []byte("half"), 0o600)
	again := record(t, dir, "p.jpg", big)
	if err := Record(again, Options{OutDir: out, MaxEdge: 1000}); err != nil || again.Blake3 != first.Blake3 {
		t.Fatalf("damaged cache: %v %s", err, again.Blake3)
	}
	ents, _ := os.ReadDir(out)
	for _, e := range ents {
		if e.Name()[0] == '.' {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	rec := &manifest.Record{Path: filepath.Join(dir, "nope.png"), Kind: manifest.KindImage}
	if err := Record(rec, Options{OutDir: dir}); fault.CodeOf(err) != fault.FileMissing {
		t.Errorf("missing: %v", err)
	}
	rec = record(t, dir, "c.png", encodePNG(t, screenshot(30, 30)))
	rec.Blake3 = "0000000000000000000000000000000000000000000000000000000000000000"
	if err := Record(rec, Options{OutDir: dir}); fault.CodeOf(err) != fault.FileChanged {
		t.Errorf("changed: %v", err)
	}
	rec = record(t, dir, "d.png", encodePNG(t, screenshot(30, 30)))
	rec.SetSize(3)
	if err := Record(rec, Options{OutDir: dir}); fault.CodeOf(err) != fault.FileChanged {
		t.Errorf("changed size: %v", err)
	}
	// Not an image: untouched.
	txt := &manifest.Record{Path: filepath.Join(dir, "nope.txt"), Kind: manifest.KindText}
	before := *txt
	if err := Record(txt, Options{OutDir: dir}); err != nil || txt.Shrink != nil || txt.Path != before.Path {
		t.Errorf("text record touched: %v %+v", err, txt)
	}
}

// ---- every stdlib image type, every subsampling ----

// refArea is the obviously-correct reference: float area averaging of m's premultiplied RGBA
// (from At) onto dw x dh, each source pixel weighted by the area it shares with the destination.
func refArea(m image.Image, dw, dh int) [][4]float64 {
	b := m.Bounds()
	W, H := b.Dx(), b.Dy()
	out := make([][4]float64, dw*dh)
	sx, sy := float64(W)/float64(dw), float64(H)/float64(dh)
	for j := 0; j < dh; j++ {
		y0, y1 := float64(j)*sy, float64(j+1)*sy
		for i := 0; i < dw; i++ {
			x0, x1 := float64(i)*sx, float64(i+1)*sx
			var acc [4]float64
			var area float64
			for y := int(y0); y < H && float64(y) < y1; y++ {
				wy := math.Min(float64(y+1), y1) - math.Max(float64(y), y0)
				for x := int(x0); x < W && float64(x) < x1; x++ {
					wx := math.Min(float64(x+1), x1) - math.Max(float64(x), x0)
					r, g, bb, a := m.At(b.Min.X+x, b.Min.Y+y).RGBA()
					w := wx * wy
					acc[0] += w * float64(r) / 257
					acc[1] += w * float64(g) / 257
					acc[2] += w * float64(bb) / 257
					acc[3] += w * float64(a) / 257
					area += w
				}
			}
			for c := range acc {
				out[j*dw+i][c] = acc[c] / area
			}
		}
	}
	return out
}

// rgbDiffs calls f with each difference of m's R, G and B from ref, in levels, and returns
// how many there were.
func rgbDiffs(m image.Image, ref [][4]float64, f func(d float64)) int {
	b := m.Bounds()
	for y := 0; y < b.Dy(); y++ {
		for x := 0; x < b.Dx(); x++ {
			r, g, bb, _ := m.At(b.Min.X+x, b.Min.Y+y).RGBA()
			p := ref[y*b.Dx()+x]
			for c, v := range []uint32{r, g, bb} {
				f(float64(v)/257 - p[c])
			}
		}
	}
	return 3 * b.Dx() * b.Dy()
}

// psnr of m's RGB against ref.
func psnr(m image.Image, ref [][4]float64) float64 {
	var se float64
	n := rgbDiffs(m, ref, func(d float64) { se += d * d })
	mse := se / float64(n)
	if mse == 0 {
		return math.Inf(1)
	}
	return 10 * math.Log10(255*255/mse)
}

func maxDiff(m image.Image, ref [][4]float64) float64 {
	b := m.Bounds()
	var worst float64
	for y := 0; y < b.Dy(); y++ {
		for x := 0; x < b.Dx(); x++ {
			r, g, bb, a := m.At(b.Min.X+x, b.Min.Y+y).RGBA()
			for c, v := range []uint32{r, g, bb, a} {
				worst = math.Max(worst, math.Abs(float64(v)/257-ref[y*b.Dx()+x][c]))
			}
		}
	}
	return worst
}

func TestResizeEveryType(t *testing.T) {
	src := image.NewNRGBA(image.Rect(0, 0, 97, 61))
	r := rand.New(rand.NewPCG(1, 2))
	for i := range src.Pix {
		src.Pix[i] = uint8(r.IntN(256))
	}
	for i := 3; i < len(src.Pix); i += 4 { // some transparency, some opaque
		if i%7 != 0 {
			src.Pix[i] = 255
		}
	}
	conv := func(dst draw.Image) image.Image {
		draw.Draw(dst, dst.Bounds(), src, image.Point{}, draw.Src)
		return dst
	}
	rect := src.Rect
	pal := make(color.Palette, 0, 256)
	for i := 0; i < 256; i++ {
		pal = append(pal, color.NRGBA{uint8(i), uint8(255 - i), uint8(i * 7), uint8(128 + i/2)})
	}
	cmyk := image.NewCMYK(rect)
	for i := range cmyk.Pix {
		cmyk.Pix[i] = uint8(r.IntN(256))
	}
	cases := map[string]image.Image{
		"NRGBA":    src,
		"RGBA":     conv(image.NewRGBA(rect)),
		"RGBA64":   conv(image.NewRGBA64(rect)),
		"NRGBA64":  conv(image.NewNRGBA64(rect)),
		"Gray":     conv(image.NewGray(rect)),
		"Gray16":   conv(image.NewGray16(rect)),
		"Paletted": conv(image.NewPaletted(rect, pal)),
		"CMYK":     cmyk,
		"Alpha":    conv(image.NewAlpha(rect)),
		"sub":      conv(image.NewRGBA(image.Rect(0, 0, 120, 80))).(*image.RGBA).SubImage(image.Rect(11, 7, 108, 68)),
	}
	for _, ratio := range []image.YCbCrSubsampleRatio{image.YCbCrSubsampleRatio444, image.YCbCrSubsampleRatio422,
		image.YCbCrSubsampleRatio420, image.YCbCrSubsampleRatio440, image.YCbCrSubsampleRatio411, image.YCbCrSubsampleRatio410} {
		y := image.NewYCbCr(rect, ratio)
		// Within the RGB gamut whatever the pairing, so that no conversion clamps.
		for i := range y.Y {
			y.Y[i] = uint8(80 + r.IntN(97))
		}
		for i := range y.Cb {
			y.Cb[i], y.Cr[i] = uint8(112+r.IntN(33)), uint8(112+r.IntN(33))
		}
		cases["YCbCr"+ratio.String()] = y
	}
	for name, m := range cases {
		for _, d := range [][2]int{{40, 25}, {97, 61}, {13, 60}, {1, 1}} {
			got := resize(m, d[0], d[1])
			if got.Bounds().Dx() != d[0] || got.Bounds().Dy() != d[1] {
				t.Fatalf("%s: size %v", name, got.Bounds())
			}
			// Averaging in YCbCr and converting afterwards differs from the reference (which
			// averages RGB) only by the clamping of out-of-gamut YCbCr and rounding.
			tol := 1.5
			if _, ok := m.(*image.YCbCr); ok {
				tol = 3
			}
			if _, ok := m.(*image.Gray16); ok {
				tol = 1.6
			}
			if diff := maxDiff(got, refArea(m, d[0], d[1])); diff > tol {
				t.Errorf("%s to %v: max difference %.2f from the float reference", name, d, diff)
			}
		}
		// An even size from YCbCr comes out 4:2:0: luma exact, chroma the 2x2 mean.
		if _, ok := m.(*image.YCbCr); ok {
			got := resize(m, 48, 30).(*image.YCbCr)
			if got.SubsampleRatio != image.YCbCrSubsampleRatio420 {
				t.Errorf("%s: even size came out %v", name, got.SubsampleRatio)
			}
			if p := psnr(got, refArea(m, 48, 30)); p < 30 { // random chroma loses its 2x2 detail
				t.Errorf("%s to 48x30: PSNR %.1f", name, p)
			}
			for _, o := range []int{5, 6, 7, 8} { // quarter turns keep 4:2:0 consistent
				r := orient(got, o).(*image.YCbCr)
				if r.Rect.Dx() != 30 || r.Rect.Dy() != 48 || len(r.Cb) != 15*24 || r.CStride != 15 {
					t.Errorf("orient %d: %v stride %d len %d", o, r.Rect, r.CStride, len(r.Cb))
				}
				if got.Cb[0] != r.Cb[r.COffset(map[int][2]int{5: {0, 0}, 6: {29, 0}, 7: {29, 47}, 8: {0, 47}}[o][0], map[int][2]int{5: {0, 0}, 6: {29, 0}, 7: {29, 47}, 8: {0, 47}}[o][1])] {
					t.Errorf("orient %d: chroma of the stored top-left not where it goes", o)
				}
			}
		}
	}
}

// Exact halving: every destination pixel is the mean of a 2x2 block (two taps each way).
func TestResizeHalf(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, m := range []image.Image{image.NewRGBA(image.Rect(0, 0, 96, 64)), image.NewGray(image.Rect(0, 0, 96, 64))} {
		switch s := m.(type) {
		case *image.RGBA:
			for i := range s.Pix {
				s.Pix[i] = uint8(r.IntN(256)) // alpha 255 below, so any colour is valid
				if i%4 == 3 {
					s.Pix[i] = 255
				}
			}
		case *image.Gray:
			for i := range s.Pix {
				s.Pix[i] = uint8(r.IntN(256))
			}
		}
		if d := maxDiff(resize(m, 48, 32), refArea(m, 48, 32)); d > 0.51 {
			t.Errorf("%T: max difference %.2f", m, d)
		}
	}
}

// Flat stays exactly flat, whatever the ratio.
func TestFlatStaysFlat(t *testing.T) {
	m := image.NewRGBA(image.Rect(0, 0, 1013, 777))
	draw.Draw(m, m.Rect, image.NewUniform(color.RGBA{37, 150, 201, 255}), image.Point{}, draw.Src)
	out := resize(m, 333, 250).(*image.RGBA)
	for i := 0; i < len(out.Pix); i += 4 {
		if out.Pix[i] != 37 || out.Pix[i+1] != 150 || out.Pix[i+2] != 201 || out.Pix[i+3] != 255 {
			t.Fatalf("pixel %d = %v", i/4, out.Pix[i:i+4])
		}
	}
}

// The stdlib's own test JPEGs, one per subsampling, and a CMYK one: the shrunk result matches
// the area average of the reference decode.
func TestJPEGFiles(t *testing.T) {
	dir := t.TempDir()
	files, _ := filepath.Glob("testdata/video-00*.jpeg")
	if len(files) < 7 {
		t.Fatalf("testdata missing: %v", files)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, _ := os.ReadFile(f)
			orig, _, err := image.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			ref := orig
			if filepath.Base(f) == "video-001.cmyk.jpeg" {
				ref, _ = decodeFile(t, "testdata/video-001.cmyk.png") // the colours it must show
			}
			// The resampler alone: near exact.
			small := resize(orig, 75, 51)
			if p := psnr(small, refArea(ref, 75, 51)); p < 40 {
				t.Errorf("resize: PSNR %.1f dB against the reference, want >= 40", p)
			}
			// The whole shrink, through a JPEG at quality 85 of a small detailed picture: the
			// colours are right (a wrong CMYK or chroma conversion is far below 20 dB).
			rec := record(t, dir, filepath.Base(f), data)
			if err := Record(rec, Options{OutDir: filepath.Join(dir, "out"), MaxEdge: 75}); err != nil {
				t.Fatal(err)
			}
			m, _ := decodeFile(t, rec.Path)
			if p := psnr(m, refArea(ref, m.Bounds().Dx(), m.Bounds().Dy())); p < 27 {
				t.Errorf("PSNR %.1f dB against the reference, want >= 27", p)
			}
		})
	}
}

// ---- quality ----

// A shrunk photo (stored sideways, EXIF orientation 6) against the float area average of the
// oriented original: PSNR at least 30 dB. A 1300x900 photo to a long edge of 1000 under a quarter
// of the default --max-bytes is the default's 2600x1800 to 2000 at half the scale: the same
// ratio and bytes a pixel, a quarter of the pixels to make and check.
func TestPhotoQuality(t *testing.T) {
	t.Parallel() // pixels only: see TestRecordTable
	dir := t.TempDir()
	stored := photo(1300, 900, 11)
	data := withExif(encodeJPEG(t, stored, 95), 6)
	dec, _, _ := image.Decode(bytes.NewReader(data))
	// Oriented by the EXIF definition of 6 (0th row on the right, 0th column at the top).
	b := dec.Bounds()
	upright := image.NewRGBA(image.Rect(0, 0, b.Dy(), b.Dx()))
	for y := 0; y < b.Dx(); y++ {
		for x := 0; x < b.Dy(); x++ {
			upright.Set(x, y, dec.At(y, b.Dy()-1-x))
		}
	}
	rec := record(t, dir, "p.jpg", data)
	if err := Record(rec, Options{OutDir: dir, MaxEdge: 1000, MaxBytes: 125_000}); err != nil {
		t.Fatal(err)
	}
	m, format := decodeFile(t, rec.Path)
	if format != "jpeg" || m.Bounds().Dx() != 692 || m.Bounds().Dy() != 1000 {
		t.Fatalf("%s %v", format, m.Bounds())
	}
	p := psnr(m, refArea(upright, 692, 1000))
	t.Logf("photo PSNR %.1f dB, %d bytes", p, rec.Size)
	if p < 30 {
		t.Errorf("PSNR %.1f dB, want >= 30", p)
	}
}

// 1-pixel strokes stay distinguishable. A 1280 px wide white image with 1-pixel black lines every
// 4 pixels is shrunk to 1000 (ratio 1.28, that of 2560 to the default 2000). Each line then darkens at least one destination row to
// at most 255 - 0.39*255 (it covers at least 0.5/1.28 of one), and each 3-pixel gap holds at least
// one whole destination row of white. The check: down the middle column, the number of runs
// darker than 200 equals the number of lines, and every run's darkest value is at most 160.
func TestStrokesSurvive(t *testing.T) {
	t.Parallel() // pixels only: see TestRecordTable
	const W, H, pitch = 1280, 800, 4
	m := image.NewGray(image.Rect(0, 0, W, H))
	for i := range m.Pix {
		m.Pix[i] = 255
	}
	lines := 0
	for y := 2; y < H-2; y += pitch {
		for x := 0; x < W; x++ {
			m.Pix[y*m.Stride+x] = 0
		}
		lines++
	}
	dir := t.TempDir()
	rec := record(t, dir, "lines.png", encodePNG(t, m))
	if err := Record(rec, Options{OutDir: dir, MaxEdge: 1000}); err != nil {
		t.Fatal(err)
	}
	out, format := decodeFile(t, rec.Path)
	if format != "png" {
		t.Fatalf("a line drawing became %s", format)
	}
	runs, darkest, inRun := 0, 255, false
	x := out.Bounds().Dx() / 2
	for y := 0; y < out.Bounds().Dy(); y++ {
		v, _, _, _ := color.GrayModel.Convert(out.At(x, y)).RGBA()
		v >>= 8
		if v < 200 {
			if !inRun {
				runs++
				inRun = true
			}
			darkest = min(darkest, int(v))
		} else if inRun {
			if darkest > 160 {
				t.Errorf("line %d only reaches %d", runs, darkest)
			}
			inRun, darkest = false, 255
		}
	}
	if runs != lines {
		t.Errorf("%d distinct dark runs, want %d lines", runs, lines)
	}
}

func b3(b []byte) string {
	s := blake3.Sum256(b)
	return hex.EncodeToString(s[:])
}

// WebP over the limits is decoded and re-encoded; BMP and TIFF are converted even within them.
func TestOtherFormats(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		file   string
		opts   Options
		action string
	}{
		{"blue-purple-pink.lossy.webp", Options{MaxEdge: 40}, Resized},
		{"gopher-doc.8bpp.lossless.webp", Options{MaxEdge: 40}, Resized},
		{"blue-purple-pink.lossy.webp", Options{}, Kept},
		{"bmp_8bpp.bmp", Options{}, Reencoded},
		{"bw-deflate.tiff", Options{}, Reencoded},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			orig, _, err := image.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			rec := record(t, dir, tc.file, data)
			tc.opts.OutDir = filepath.Join(dir, "out")
			if err := Record(rec, tc.opts); err != nil {
				t.Fatal(err)
			}
			if rec.Shrink.Action != tc.action {
				t.Fatalf("%+v, want %s", rec.Shrink, tc.action)
			}
			if tc.action == Kept {
				return
			}
			m, format := decodeFile(t, rec.Path)
			if format != "png" && format != "jpeg" {
				t.Fatalf("became %s", format)
			}
			if p := psnr(m, refArea(orig, m.Bounds().Dx(), m.Bounds().Dy())); p < 27 {
				t.Errorf("PSNR %.1f dB", p)
			}
		})
	}
}

// TestKeptByHead: with no BLAKE3 to check (a head-only sniff), an in-limit PNG or JPEG is kept from
// its header and size alone; an animated PNG (acTL before the pixels) is still found, and a size
// other than the record's is file.changed.
func TestKeptByHead(t *testing.T) {
	dir := t.TempDir()
	png := encodePNG(t, screenshot(300, 200))
	// An APNG: the same PNG with an acTL chunk (2 frames) right after IHDR.
	actl := []byte{0, 0, 0, 8, 'a', 'c', 'T', 'L', 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0}
	apng := append(append(append([]byte(nil), png[:33]...), actl...), png[33:]...)
	cases := []struct {
		name, action string
		data         []byte
	}{
		{"still.png", Kept, png},
		{"still.jpg", Kept, encodeJPEG(t, photo(400, 300, 3), 80)},
		{"moving.png", AsIs, apng},
		{"moving.gif", AsIs, animatedGIF(t)},
	}
	for _, c := range cases {
		rec := record(t, dir, c.name, c.data)
		if err := Record(rec, Options{OutDir: filepath.Join(dir, "out")}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if rec.Shrink == nil || rec.Shrink.Action != c.action {
			t.Errorf("%s: got %+v, want %s", c.name, rec.Shrink, c.action)
		}
	}
	rec := record(t, dir, "grew.png", png)
	rec.SetSize(int64(len(png)) - 1)
	if err := Record(rec, Options{}); fault.CodeOf(err) != fault.FileChanged {
		t.Errorf("a size other than the record's: %v, want file.changed", err)
	}
}

// vpass sums one, two, three and more rows each its own way: every way gives the rounded
// weighted sum.
func TestVpassEveryTapCount(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for taps := 1; taps <= 6; taps++ {
		const n = 257
		rows := make([][]uint16, taps)
		ws := make([]uint32, taps)
		left := uint32(1 << wBits)
		for k := range rows {
			rows[k] = make([]uint16, n)
			for i := range rows[k] {
				rows[k][i] = uint16(r.IntN(255<<8 + 1)) // 8.8 fixed point, at most 255.0
			}
			ws[k] = left
			if k < taps-1 {
				ws[k] = uint32(r.IntN(int(left) + 1))
			}
			left -= ws[k]
		}
		out := make([]uint8, n)
		vpass(out, rows, ws, make([]uint32, n))
		for i := range out {
			var sum uint32
			for k := range rows {
				sum += ws[k] * uint32(rows[k][i])
			}
			if want := uint8((sum + 1<<21) >> 22); out[i] != want {
				t.Fatalf("%d taps, sample %d: %d, want %d", taps, i, out[i], want)
			}
		}
	}
}

// The truecolour estimate is within a fifth above the real size (encode skips truecolour only when
// the estimate is a quarter over the limit): else a lossless PNG that would have fitted goes on a
// palette. It may be well below: then truecolour is tried, as without an estimate.
func TestTruecolourEstimate(t *testing.T) {
	t.Parallel() // pixels only: see TestRecordTable
	enc := png.Encoder{CompressionLevel: pngLevel}
	r := rand.New(rand.NewPCG(7, 8))
	noise := image.NewRGBA(image.Rect(0, 0, 640, 480))
	for i := range noise.Pix {
		noise.Pix[i] = uint8(r.IntN(256))
		if i%4 == 3 {
			noise.Pix[i] = 255
		}
	}
	topBusy := image.NewRGBA(image.Rect(0, 0, 800, 600))
	draw.Draw(topBusy, topBusy.Rect, image.White, image.Point{}, draw.Src)
	draw.Draw(topBusy, image.Rect(0, 0, 800, 300), noise, image.Point{}, draw.Src)
	shot := resize(screenshot(1280, 800), 1000, 625).(*image.RGBA)
	for name, m := range map[string]*image.RGBA{
		"screenshot": shot,
		"photo":      photo(800, 600, 3),
		"noise":      noise,
		"top busy":   topBusy,
		"sub-image":  shot.SubImage(image.Rect(50, 18, 550, 468)).(*image.RGBA),
	} {
		var whole bytes.Buffer
		if err := enc.Encode(&whole, m); err != nil {
			t.Fatal(err)
		}
		est, got := truecolourEstimate(m, enc), int64(whole.Len())
		if est > got+got/5 || est < got/3 {
			t.Errorf("%s: estimate %d for %d bytes", name, est, got)
		}
	}
	if est := truecolourEstimate(image.NewRGBA(image.Rect(0, 0, 500, 100)), enc); est != 0 {
		t.Errorf("an image of 100 rows estimated %d, want 0 (tried whole)", est)
	}
}

// TestNewName: the shrunk file's name keeps the base and takes the new extension, within the 255
// bytes a name may have, cut where a character starts so it stays valid UTF-8.
func TestNewName(t *testing.T) {
	a := strings.Repeat
	tests := []struct{ name, ext, want string }{
		{"photo.HEIC", ".jpg", "photo.jpg"},
		{"scan.tar.bmp", ".png", "scan.tar.png"},
		{".png", ".jpg", "image.jpg"},
		{a("a", 255), ".png", a("a", 251) + ".png"},
		{a("é", 127) + "a", ".png", a("é", 125) + ".png"}, // 251 bytes would end inside an é
		{a("a", 250) + ".bmp", ".jpg", a("a", 250) + ".jpg"},
		{a("a", 250) + ".tiff", ".png", a("a", 250) + ".png"},
		{a("日", 85), ".jpg", a("日", 83) + ".jpg"},
	}
	for _, tt := range tests {
		got := newName(tt.name, tt.ext)
		if got != tt.want || len(got) > 255 || !utf8.ValidString(got) {
			t.Errorf("newName(%d bytes %.12q..., %s) = %d bytes %.12q...", len(tt.name), tt.name, tt.ext, len(got), got)
		}
	}
}
