package shrink

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// adobeD50 are Adobe RGB (1998)'s colorants adapted to D50, as its profile carries them.
var adobeD50 = [3][3]float64{{0.60974, 0.31111, 0.01947}, {0.20528, 0.62567, 0.06087}, {0.14919, 0.06322, 0.74457}}

// adobeGamma is Adobe RGB's tone curve, a gamma of 563/256 as its profile stores it.
const adobeGamma = 563.0 / 256

// makeICC is a minimal ICC v2 display profile of RGB by matrix and tone curves: colorants
// (XYZ of red, green, blue) and one curve shared by the channels (curv bytes after the type).
func makeICC(desc string, colorants [3][3]float64, curv []byte) []byte {
	s15 := func(v float64) []byte { return binary.BigEndian.AppendUint32(nil, uint32(int32(math.Round(v*65536)))) }
	xyz := func(v [3]float64) []byte {
		b := append([]byte("XYZ "), 0, 0, 0, 0)
		for _, c := range v {
			b = append(b, s15(c)...)
		}
		return b
	}
	d := append([]byte("desc"), 0, 0, 0, 0)
	d = binary.BigEndian.AppendUint32(d, uint32(len(desc)+1))
	d = append(append(d, desc...), 0)
	d = append(d, make([]byte, 4+4+2+1+67)...) // no Unicode or ScriptCode descriptions
	curve := append(append([]byte("curv"), 0, 0, 0, 0), curv...)
	type tag struct {
		sig  string
		data []byte
	}
	tags := []tag{{"desc", d}, {"wtpt", xyz([3]float64{0.9642, 1, 0.8249})},
		{"rXYZ", xyz(colorants[0])}, {"gXYZ", xyz(colorants[1])}, {"bXYZ", xyz(colorants[2])},
		{"rTRC", curve}, {"gTRC", curve}, {"bTRC", curve}}
	off := 128 + 4 + 12*len(tags)
	var table, body []byte
	table = binary.BigEndian.AppendUint32(table, uint32(len(tags)))
	for _, t := range tags {
		for len(body)%4 != 0 {
			body = append(body, 0)
		}
		table = append(table, t.sig...)
		table = binary.BigEndian.AppendUint32(table, uint32(off+len(body)))
		table = binary.BigEndian.AppendUint32(table, uint32(len(t.data)))
		body = append(body, t.data...)
	}
	h := make([]byte, 128)
	binary.BigEndian.PutUint32(h, uint32(128+len(table)+len(body)))
	binary.BigEndian.PutUint32(h[8:], 0x02100000)
	copy(h[12:], "mntrRGB XYZ ")
	copy(h[36:], "acsp")
	copy(h[68:], append(append(s15(0.9642), s15(1)...), s15(0.8249)...))
	return append(append(h, table...), body...)
}

// gammaCurve is a curv of one entry: a gamma in u8Fixed8.
func gammaCurve(g float64) []byte {
	return []byte{0, 0, 0, 1, byte(int(g*256) >> 8), byte(int(g * 256))}
}

// withICC puts an ICC profile into a JPEG as APP2 segments of at most 60000 bytes each.
func withICC(jpg, icc []byte) []byte {
	const chunk = 60000
	n := (len(icc) + chunk - 1) / chunk
	out := append([]byte{}, jpg[:2]...)
	for i := 0; i < n; i++ {
		part := icc[i*chunk : min(len(icc), (i+1)*chunk)]
		seg := append([]byte("ICC_PROFILE\x00"), byte(i+1), byte(n))
		seg = append(seg, part...)
		out = append(out, 0xff, 0xe2, byte((len(seg)+2)>>8), byte(len(seg)+2))
		out = append(out, seg...)
	}
	return append(out, jpg[2:]...)
}

// pngWithICC puts an iCCP chunk right after a PNG's IHDR.
func pngWithICC(t testing.TB, p, icc []byte) []byte {
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	w.Write(icc)
	w.Close()
	data := append([]byte("profile\x00\x00"), z.Bytes()...)
	c := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	c = append(append(c, "iCCP"...), data...)
	c = binary.BigEndian.AppendUint32(c, crc32.ChecksumIEEE(append([]byte("iCCP"), data...)))
	at := 8 + 25 // signature, IHDR
	return append(append(append([]byte{}, p[:at]...), c...), p[at:]...)
}

// adobeToSRGB is the reference conversion, by the D65 matrices of the two spaces (not the D50
// colorants the code reads): Adobe RGB encoded to linear, to XYZ, to linear sRGB, to encoded.
func adobeToSRGB(c color.Color) color.RGBA {
	r, g, b, _ := c.RGBA()
	lin := [3]float64{}
	for i, v := range []uint32{r, g, b} {
		lin[i] = math.Pow(float64(v)/0xffff, adobeGamma)
	}
	toXYZ := [9]float64{0.5767309, 0.1855540, 0.1881852, 0.2973769, 0.6273491, 0.0752741, 0.0270343, 0.0706872, 0.9911085}
	toSRGB := [9]float64{3.2404542, -1.5371385, -0.4985314, -0.9692660, 1.8760108, 0.0415560, 0.0556434, -0.2040259, 1.0572252}
	var xyz, out [3]float64
	for i := range 3 {
		xyz[i] = toXYZ[3*i]*lin[0] + toXYZ[3*i+1]*lin[1] + toXYZ[3*i+2]*lin[2]
	}
	var px [3]uint8
	for i := range 3 {
		out[i] = toSRGB[3*i]*xyz[0] + toSRGB[3*i+1]*xyz[1] + toSRGB[3*i+2]*xyz[2]
		v := math.Max(0, math.Min(1, out[i]))
		if v <= 0.0031308 {
			v *= 12.92
		} else {
			v = 1.055*math.Pow(v, 1/2.4) - 0.055
		}
		px[i] = uint8(math.Round(255 * v))
	}
	return color.RGBA{px[0], px[1], px[2], 255}
}

// vivid is smooth and saturated: gradients and bright blocks, where Adobe RGB and sRGB differ
// most and where JPEG's own error stays well under the two levels the test allows.
func vivid(w, h int) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			fx, fy := float64(x)/float64(w), float64(y)/float64(h)
			c := color.RGBA{clamp8(40 + 180*fx), clamp8(50 + 160*fy), clamp8(200 - 120*fx*fy), 255}
			switch (x * 2 / w) + 2*(y*2/h) { // quadrants: gradient, green, red, blue
			case 1:
				c.R, c.G, c.B = 30, clamp8(170+60*fy), 40
			case 2:
				c.R, c.G, c.B = clamp8(180+50*fx), 60, 30
			case 3:
				c.B = 235
			}
			m.SetRGBA(x, y, c)
		}
	}
	return m
}

// meanError is the mean absolute difference of m's RGB from ref, in levels.
func meanError(m image.Image, ref [][4]float64) float64 {
	var sum float64
	n := rgbDiffs(m, ref, func(d float64) { sum += math.Abs(d) })
	return sum / float64(n)
}

// converted is the reference conversion of every pixel of m.
func converted(m image.Image) *image.RGBA {
	b := m.Bounds()
	out := image.NewRGBA(b)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			out.SetRGBA(x, y, adobeToSRGB(m.At(x, y)))
		}
	}
	return out
}

// TestAdobeRGBConverted: a JPEG in Adobe RGB with its profile comes out as sRGB with no profile:
// its pixels match the reference conversion of the source, area-averaged (mean error under two
// levels), and differ from the unconverted pixels. A PNG with the profile in iCCP is converted
// too, and a profile that is sRGB already or cannot be read changes nothing.
func TestAdobeRGBConverted(t *testing.T) {
	t.Parallel() // pixels only: see TestRecordTable
	adobe := makeICC("Adobe RGB (1998)", adobeD50, gammaCurve(adobeGamma))
	src := vivid(1200, 800)
	jpg := encodeJPEG(t, src, 95)
	decoded, _, err := image.Decode(bytes.NewReader(jpg))
	if err != nil {
		t.Fatal(err)
	}
	wantConv := refArea(converted(decoded), 300, 200)
	wantAsIs := refArea(decoded, 300, 200)

	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	shrink := func(t *testing.T, name string, data []byte) (image.Image, *Options) {
		rec := record(t, dir, name, data)
		opts := &Options{MaxEdge: 300, OutDir: out}
		if err := Record(rec, *opts); err != nil {
			t.Fatal(err)
		}
		if rec.Shrink.Action != Resized {
			t.Fatalf("shrink %+v", rec.Shrink)
		}
		b, err := os.ReadFile(rec.Path)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("ICC_PROFILE")) || bytes.Contains(b, []byte("iCCP")) {
			t.Error("the output carries a profile")
		}
		m, _ := decodeFile(t, rec.Path)
		t.Logf("%s: %s; mean error %.2f against the conversion, %.2f against the source", name,
			rec.Shrink.Reason, meanError(m, wantConv), meanError(m, wantAsIs))
		return m, opts
	}

	t.Run("jpeg", func(t *testing.T) {
		m, _ := shrink(t, "adobe.jpg", withICC(jpg, adobe))
		if e := meanError(m, wantConv); e >= 2 {
			t.Errorf("mean error %.2f levels against the reference sRGB conversion", e)
		}
		if e := meanError(m, wantAsIs); e < 4 {
			t.Errorf("mean difference %.2f levels from the unconverted pixels: not converted?", e)
		}
	})
	t.Run("png", func(t *testing.T) {
		m, _ := shrink(t, "adobe.png", pngWithICC(t, encodePNG(t, decoded), adobe))
		if e := meanError(m, wantConv); e >= 2 {
			t.Errorf("mean error %.2f levels against the reference sRGB conversion", e)
		}
	})
	t.Run("unreadable profile", func(t *testing.T) {
		bad := append([]byte{}, adobe...)
		copy(bad[36:], "xxxx")
		rec := record(t, dir, "bad.jpg", withICC(jpg, bad))
		if err := Record(rec, Options{MaxEdge: 300, OutDir: out}); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s", rec.Shrink.Reason)
		if !strings.Contains(rec.Shrink.Reason, "not applied: not an ICC profile") {
			t.Errorf("reason %q", rec.Shrink.Reason)
		}
		m, _ := decodeFile(t, rec.Path)
		if e := meanError(m, wantAsIs); e >= 2 {
			t.Errorf("mean error %.2f levels against the unconverted pixels", e)
		}
	})
	srgbCurve := []byte{0, 0, 0, 0}
	binary.BigEndian.PutUint32(srgbCurve, 1024)
	for i := range 1024 {
		srgbCurve = binary.BigEndian.AppendUint16(srgbCurve, uint16(math.Round(65535*srgbToLinear(float64(i)/1023))))
	}
	srgb := makeICC("sRGB IEC61966-2.1", [3][3]float64{{0.4360747, 0.2225045, 0.0139322},
		{0.3850649, 0.7168786, 0.0971045}, {0.1430804, 0.0606169, 0.7141733}}, srgbCurve)
	small := encodeJPEG(t, vivid(240, 160), 90)
	for _, tt := range []struct {
		name, reason string
		data         []byte
	}{
		{"in limits, Adobe RGB", `colour profile "Adobe RGB (1998)" is not sRGB`, withICC(small, adobe)},
		{"in limits, sRGB profile", "within limits", withICC(small, srgb)},
		{"in limits, unreadable profile", "within limits", withICC(small, adobe[:100])},
		{"in limits, no profile", "within limits", small},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, hashed := range []bool{false, true} { // keptByHead, then the whole file
				rec := record(t, dir, "small.jpg", tt.data)
				if hashed {
					rec.Blake3 = b3(tt.data)
				}
				if err := Record(rec, Options{OutDir: out}); err != nil {
					t.Fatal(err)
				}
				if rec.Shrink.Reason != tt.reason {
					t.Errorf("hashed %v: %s, %q; want %q", hashed, rec.Shrink.Action, rec.Shrink.Reason, tt.reason)
				}
			}
		})
	}
}

// TestContainerColour: a HEIC whose colr box carries the Adobe RGB profile, and an AVIF whose
// nclx says Display P3 primaries with the sRGB curve, come out converted to sRGB.
func TestContainerColour(t *testing.T) {
	t.Parallel() // pixels only: see TestRecordTable
	dir := t.TempDir()
	src := vivid(1200, 800)
	png := filepath.Join(dir, "src.png")
	pngData := encodePNG(t, src)

	t.Run("HEIC with an ICC profile", func(t *testing.T) {
		adobe := makeICC("Adobe RGB (1998)", adobeD50, gammaCurve(adobeGamma))
		if err := os.WriteFile(png, pngWithICC(t, pngData, adobe), 0o600); err != nil {
			t.Fatal(err)
		}
		heic := filepath.Join(dir, "adobe.heic")
		run(t, "heif-enc", "-q", "95", "-o", heic, png)
		data, _ := os.ReadFile(heic)
		if p, ok := heifHeader(data); !ok || !bytes.Equal(p.ICC, adobe) {
			t.Fatalf("heif-enc did not keep the profile: %+v", p)
		}
		m := shrinkTo300(t, dir, heic)
		if e := meanError(m, refArea(converted(src), 300, 200)); e >= 3 {
			t.Errorf("mean error %.2f levels against the reference sRGB conversion", e)
		}
		if e := meanError(m, refArea(src, 300, 200)); e < 4 {
			t.Errorf("mean difference %.2f levels from the unconverted pixels: not converted?", e)
		}
	})
	t.Run("AVIF with nclx Display P3", func(t *testing.T) {
		if err := os.WriteFile(png, pngData, 0o600); err != nil {
			t.Fatal(err)
		}
		avif := filepath.Join(dir, "p3.avif")
		run(t, "avifenc", "-d", "8", "--min", "4", "--max", "10", "-s", "8", "--cicp", "12/13/6", "-r", "full", png, avif)
		m := shrinkTo300(t, dir, avif)
		// The reference: Display P3 (D65) to XYZ to sRGB, by the published primaries.
		p3 := primariesToXYZ([3][2]float64{{0.680, 0.320}, {0.265, 0.690}, {0.150, 0.060}}, [2]float64{0.3127, 0.3290})
		srgb := primariesToXYZ([3][2]float64{{0.64, 0.33}, {0.30, 0.60}, {0.15, 0.06}}, [2]float64{0.3127, 0.3290})
		inv, _ := invert3(srgb)
		toSRGB := mul3(inv, p3)
		ref := image.NewRGBA(src.Rect)
		for i := 0; i < len(src.Pix); i += 4 {
			var lin [3]float64
			for c := range 3 {
				lin[c] = srgbToLinear(float64(src.Pix[i+c]) / 255)
			}
			for c := range 3 {
				v := toSRGB[3*c]*lin[0] + toSRGB[3*c+1]*lin[1] + toSRGB[3*c+2]*lin[2]
				ref.Pix[i+c] = clamp8(255 * linearToSRGB(math.Max(0, math.Min(1, v))))
			}
			ref.Pix[i+3] = 255
		}
		if e := meanError(m, refArea(ref, 300, 200)); e >= 3 {
			t.Errorf("mean error %.2f levels against the reference sRGB conversion", e)
		}
		if e := meanError(m, refArea(src, 300, 200)); e < 3 {
			t.Errorf("mean difference %.2f levels from the unconverted pixels: not converted?", e)
		}
	})
}

// shrinkTo300 shrinks the file at path to a long edge of 300 and decodes the result.
func shrinkTo300(t *testing.T, dir, path string) image.Image {
	t.Helper()
	rec := shrinkFile(t, dir, path, 300)
	if !strings.Contains(rec.Shrink.Reason, "is not sRGB") {
		t.Errorf("reason %q", rec.Shrink.Reason)
	}
	t.Log(rec.Shrink.Reason)
	m, _ := decodeFile(t, rec.Path)
	if b := m.Bounds(); b.Dx() != 300 || b.Dy() != 200 {
		t.Fatalf("%v", b)
	}
	return m
}

// webpWithICC wraps a simple lossy WebP (one VP8 chunk) as an extended one: VP8X with the ICC
// flag, an ICCP chunk, then the VP8 chunk.
func webpWithICC(t testing.TB, simple, icc []byte, w, h int) []byte {
	if string(simple[12:16]) != "VP8 " {
		t.Fatal("not a simple lossy WebP")
	}
	chunk := func(fourcc string, data []byte) []byte {
		c := append([]byte(fourcc), binary.LittleEndian.AppendUint32(nil, uint32(len(data)))...)
		c = append(c, data...)
		if len(data)%2 == 1 {
			c = append(c, 0)
		}
		return c
	}
	vp8x := []byte{0x20, 0, 0, 0, byte(w - 1), byte((w - 1) >> 8), byte((w - 1) >> 16), byte(h - 1), byte((h - 1) >> 8), byte((h - 1) >> 16)}
	body := append([]byte("WEBP"), chunk("VP8X", vp8x)...)
	body = append(body, chunk("ICCP", icc)...)
	body = append(body, simple[12:]...)
	return append(append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(len(body)))...), body...)
}

// TestWebPProfile: a WebP within the limits whose ICCP chunk is Adobe RGB is converted, not
// kept, from the head alone or from the whole file; its pixels come out converted.
func TestWebPProfile(t *testing.T) {
	simple, err := os.ReadFile("testdata/blue-purple-pink.lossy.webp")
	if err != nil {
		t.Fatal(err)
	}
	src, _, err := image.Decode(bytes.NewReader(simple))
	if err != nil {
		t.Fatal(err)
	}
	b := src.Bounds()
	adobe := makeICC("Adobe RGB (1998)", adobeD50, gammaCurve(adobeGamma))
	data := webpWithICC(t, simple, adobe, b.Dx(), b.Dy())
	if m, _, err := image.Decode(bytes.NewReader(data)); err != nil || m.Bounds() != b {
		t.Fatalf("the extended WebP does not decode: %v", err)
	}
	dir := t.TempDir()
	// The same picture encoded the same way with no conversion: the JPEG's own error against
	// the source is the baseline.
	enc, _, _, _, ok := encode(src, 1, b.Dx(), b.Dy(), DefaultMaxBytes, nil)
	if !ok {
		t.Fatal("encode")
	}
	m0, _, err := image.Decode(bytes.NewReader(enc))
	if err != nil {
		t.Fatal(err)
	}
	baseline := meanError(m0, refArea(src, b.Dx(), b.Dy()))
	for _, hashed := range []bool{false, true} {
		rec := record(t, dir, "p.webp", data)
		if hashed {
			rec.Blake3 = b3(data)
		}
		if err := Record(rec, Options{OutDir: filepath.Join(dir, "out")}); err != nil {
			t.Fatal(err)
		}
		if rec.Shrink.Action != Reencoded || !strings.Contains(rec.Shrink.Reason, `"Adobe RGB (1998)" is not sRGB`) {
			t.Fatalf("hashed %v: %+v", hashed, rec.Shrink)
		}
		// The output is a JPEG at quality 85 of a small detailed picture, which alone is some
		// levels off: converted means as near the conversion as the plain one is to the source.
		m, _ := decodeFile(t, rec.Path)
		conv, asis := meanError(m, refArea(converted(src), b.Dx(), b.Dy())), meanError(m, refArea(src, b.Dx(), b.Dy()))
		t.Logf("mean error %.2f against the conversion, %.2f against the source; %.2f for the plain WebP", conv, asis, baseline)
		if conv > baseline+0.5 || asis < baseline+2 {
			t.Errorf("mean error %.2f levels against the reference sRGB conversion, %.2f against the source; baseline %.2f", conv, asis, baseline)
		}
	}
}
