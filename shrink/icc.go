package shrink

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"io"
	"math"
	"strings"
	"sync"
	"unicode/utf16"

	"github.com/attachctl/attachctl/sniff"
)

// Colour. An image whose embedded profile (JPEG APP2, PNG iCCP, WebP ICCP, HEIF colr) describes
// RGB by a matrix and three tone curves (Display P3, Adobe RGB, ProPhoto and the like) is
// converted to sRGB; the output carries no profile, so sRGB is what every viewer assumes. A
// profile that is sRGB already changes nothing. One that cannot be read or is not of that kind
// (a lookup-table or CMYK profile) leaves the pixels as they are, and the reason says so.
//
// The conversion is applied to the downscaled image, not the full one: area averaging is done on
// the encoded values either way, so the two orders differ by rounding (the colour tests bound it),
// and converting the small image costs a fraction of converting every source pixel.

// colour is what an image's profile asks for.
type colour struct {
	name string      // the profile's description, for reasons
	conv *colourConv // nil: nothing to do (no profile, or sRGB already)
	err  error       // a profile that is there but not applied
}

// colourConv maps 8-bit encoded RGB in the profile's space to 8-bit sRGB.
type colourConv struct {
	lin [3][256]float32 // each channel's tone curve: encoded value to linear light
	m   [9]float32      // linear source RGB to linear sRGB, row order
}

// srgbD50 is sRGB's primaries adapted to the ICC connection space's D50 white (Bradford), as the
// sRGB profiles carry them: columns are the red, green and blue colorants' XYZ.
var srgbD50 = [9]float64{
	0.4360747, 0.3850649, 0.1430804,
	0.2225045, 0.7168786, 0.0606169,
	0.0139322, 0.0971045, 0.7141733,
}

// profileOf finds an image's embedded colour profile and reads it.
func profileOf(format string, data []byte, hp heifProps) colour {
	var icc []byte
	var err error
	switch format {
	case "jpeg":
		icc, _, err = jpegICC(data)
	case "png":
		icc, err = pngICC(data)
	case "webp":
		icc = riffChunk(data, "ICCP")
	case "heic", "avif":
		icc = hp.ICC
		if icc == nil && hp.NCLX != nil {
			return nclxColour(hp.NCLX)
		}
	}
	if err != nil {
		return colour{name: "embedded", err: err}
	}
	if icc == nil {
		return colour{}
	}
	return iccColour(icc)
}

// profileInHead reports whether a head of a file holds all of its colour profile there is: for
// JPEG, every segment up to the first SOS; for WebP, the ICCP chunk when VP8X says there is one.
// (A PNG's head is only judged once it reaches IDAT, and iCCP comes before.)
func profileInHead(format string, head []byte) bool {
	switch format {
	case "jpeg":
		_, complete, _ := jpegICC(head)
		return complete
	case "webp":
		if c := riffChunk(head, "VP8X"); len(c) >= 1 && c[0]&0x20 != 0 {
			return riffChunk(head, "ICCP") != nil
		}
	}
	return true
}

// jpegICC joins the chunks of an ICC profile from a JPEG's APP2 "ICC_PROFILE" segments, which
// come before the first SOS; complete is whether d reaches that SOS.
func jpegICC(d []byte) (icc []byte, complete bool, err error) {
	var parts [][]byte
	total := 0
	complete = jpegSegments(d, func(m byte, seg []byte) bool {
		if m != 0xe2 || len(seg) < 14 || string(seg[:12]) != "ICC_PROFILE\x00" {
			return true
		}
		seq, count := int(seg[12]), int(seg[13])
		switch {
		case seq < 1 || seq > count:
			err = errors.New("ICC chunks out of order")
		case parts != nil && (count != len(parts) || parts[seq-1] != nil):
			err = errors.New("ICC chunks do not agree")
		}
		if err != nil {
			return false
		}
		if parts == nil {
			parts = make([][]byte, count)
		}
		parts[seq-1] = seg[14:]
		total += len(seg) - 14
		return true
	})
	if err != nil {
		return nil, true, err
	}
	if parts == nil {
		return nil, complete, nil
	}
	out := make([]byte, 0, total)
	for _, p := range parts {
		if p == nil {
			return nil, complete, errors.New("an ICC chunk is missing")
		}
		out = append(out, p...)
	}
	return out, complete, nil
}

// pngICC inflates a PNG's iCCP chunk: a name, a zero, the method (0), the zlib stream.
func pngICC(d []byte) ([]byte, error) {
	c := pngChunk(d, "iCCP")
	if c == nil {
		return nil, nil
	}
	z := bytes.IndexByte(c, 0)
	if z < 0 || z+2 > len(c) || c[z+1] != 0 {
		return nil, errors.New("iCCP chunk malformed")
	}
	r, err := zlib.NewReader(bytes.NewReader(c[z+2:]))
	if err != nil {
		return nil, fmt.Errorf("iCCP: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(r, 4<<20))
	if err != nil {
		return nil, fmt.Errorf("iCCP: %w", err)
	}
	return b, nil
}

// iccColour reads an ICC profile of RGB by matrix and tone curves.
func iccColour(p []byte) colour {
	if len(p) < 132 || string(p[36:40]) != "acsp" {
		return colour{name: "embedded", err: errors.New("not an ICC profile")}
	}
	c := colour{name: iccDesc(p)}
	space := strings.TrimSpace(string(p[16:20]))
	switch {
	case space == "GRAY":
		return c // a grey tone curve: near enough to sRGB's, left as it is
	case space != "RGB":
		c.err = fmt.Errorf("a %s profile is not converted", space)
		return c
	case string(p[20:24]) != "XYZ ":
		c.err = errors.New("a profile connecting through Lab is not converted")
		return c
	}
	tags := map[string][]byte{}
	n := int(binary.BigEndian.Uint32(p[128:]))
	for i := 0; i < n && 132+12*i+12 <= len(p); i++ {
		e := p[132+12*i:]
		off, size := int(binary.BigEndian.Uint32(e[4:])), int(binary.BigEndian.Uint32(e[8:]))
		if off >= 0 && size >= 0 && off <= len(p) && size <= len(p)-off {
			tags[string(e[:4])] = p[off : off+size]
		}
	}
	var src [9]float64
	var conv colourConv
	for ch, name := range []string{"r", "g", "b"} {
		xyz, ok := xyzTag(tags[name+"XYZ"])
		if !ok {
			c.err = errors.New("the profile has no matrix (colorant tags)")
			return c
		}
		for k := range 3 {
			src[3*k+ch] = xyz[k]
		}
		curve, err := trc(tags[name+"TRC"])
		if err != nil {
			c.err = err
			return c
		}
		for v := range 256 {
			conv.lin[ch][v] = float32(curve(float64(v) / 255))
		}
	}
	inv, ok := invert3(srgbD50)
	if !ok {
		panic("sRGB matrix singular")
	}
	m := mul3(inv, src)
	for i := range m {
		conv.m[i] = float32(m[i])
	}
	if !conv.isSRGB() {
		c.conv = &conv
	}
	return c
}

// nclxColour is the conversion for a HEIF/AVIF colour description by code points (H.273):
// Display P3 and BT.2020 primaries with the sRGB tone curve are converted; sRGB/BT.709
// primaries need nothing; others are left as they are, with the reason.
func nclxColour(n *sniff.NCLX) colour {
	var prim [3][2]float64
	switch n.Primaries {
	case 1, 2: // BT.709 (sRGB's), unspecified
		return colour{}
	case 12:
		prim = [3][2]float64{{0.680, 0.320}, {0.265, 0.690}, {0.150, 0.060}}
	case 9:
		prim = [3][2]float64{{0.708, 0.292}, {0.170, 0.797}, {0.131, 0.046}}
	default:
		return colour{name: fmt.Sprintf("nclx primaries %d", n.Primaries), err: errors.New("primaries not converted")}
	}
	c := colour{name: map[int]string{12: "Display P3 (nclx)", 9: "BT.2020 (nclx)"}[n.Primaries]}
	switch n.Transfer {
	case 13, 2, 1, 6: // sRGB; unspecified; BT.709's, which displays as sRGB's
	default:
		c.err = fmt.Errorf("transfer characteristics %d not converted", n.Transfer)
		return c
	}
	// The RGB to XYZ matrix of the primaries with a D65 white, then Bradford to D50.
	src := primariesToXYZ(prim, [2]float64{0.3127, 0.3290})
	srgb := primariesToXYZ([3][2]float64{{0.64, 0.33}, {0.30, 0.60}, {0.15, 0.06}}, [2]float64{0.3127, 0.3290})
	inv, _ := invert3(srgb)
	m := mul3(inv, src)
	var conv colourConv
	for ch := range 3 {
		for v := range 256 {
			conv.lin[ch][v] = float32(srgbToLinear(float64(v) / 255))
		}
	}
	for i := range m {
		conv.m[i] = float32(m[i])
	}
	c.conv = &conv
	return c
}

// primariesToXYZ is the RGB to XYZ matrix of chromaticities prim and white point w.
func primariesToXYZ(prim [3][2]float64, w [2]float64) [9]float64 {
	var p [9]float64
	for ch, xy := range prim {
		p[ch], p[3+ch], p[6+ch] = xy[0]/xy[1], 1, (1-xy[0]-xy[1])/xy[1]
	}
	W := [3]float64{w[0] / w[1], 1, (1 - w[0] - w[1]) / w[1]}
	inv, _ := invert3(p)
	var s [3]float64
	for i := range 3 {
		s[i] = inv[3*i]*W[0] + inv[3*i+1]*W[1] + inv[3*i+2]*W[2]
	}
	for r := range 3 {
		for ch := range 3 {
			p[3*r+ch] *= s[ch]
		}
	}
	return p
}

// isSRGB reports whether the conversion is the identity to within a fraction of a level.
func (c *colourConv) isSRGB() bool {
	id := [9]float32{1, 0, 0, 0, 1, 0, 0, 0, 1}
	for i := range id {
		if math.Abs(float64(c.m[i]-id[i])) > 0.003 {
			return false
		}
	}
	for ch := range 3 {
		for v := 0; v < 256; v += 5 {
			if math.Abs(float64(c.lin[ch][v])-srgbToLinear(float64(v)/255))*255 > 0.5 {
				return false
			}
		}
	}
	return true
}

func srgbToLinear(v float64) float64 {
	if v <= 0.04045 {
		return v / 12.92
	}
	return math.Pow((v+0.055)/1.055, 2.4)
}

func linearToSRGB(v float64) float64 {
	if v <= 0.0031308 {
		return 12.92 * v
	}
	return 1.055*math.Pow(v, 1/2.4) - 0.055
}

// encodeLUT maps linear light in steps of 1/(len-1) to 8-bit sRGB: fine enough that the darkest
// step (where sRGB is steepest) moves the output by under half a level. Made on first use, not
// at start-up: every command would pay for its 16,385 powers, and only a colour conversion
// needs them.
var encodeLUT = sync.OnceValue(func() []uint8 {
	t := make([]uint8, 1<<14+1)
	for i := range t {
		t[i] = uint8(math.Round(255 * linearToSRGB(float64(i)/float64(len(t)-1))))
	}
	return t
})

// xyzTag reads an XYZType tag's first value.
func xyzTag(t []byte) ([3]float64, bool) {
	if len(t) < 20 || string(t[:4]) != "XYZ " {
		return [3]float64{}, false
	}
	var v [3]float64
	for i := range v {
		v[i] = s15f16(t[8+4*i:])
	}
	return v, true
}

func s15f16(b []byte) float64 { return float64(int32(binary.BigEndian.Uint32(b))) / 65536 }

// trc reads a tone curve tag (curveType or parametricCurveType) as a function on [0, 1].
func trc(t []byte) (func(float64) float64, error) {
	if len(t) < 12 {
		return nil, errors.New("the profile has no tone curves")
	}
	switch string(t[:4]) {
	case "curv":
		n := int(binary.BigEndian.Uint32(t[8:]))
		switch {
		case n == 0:
			return func(v float64) float64 { return v }, nil
		case n == 1 && len(t) >= 14:
			g := float64(binary.BigEndian.Uint16(t[12:])) / 256
			return func(v float64) float64 { return math.Pow(v, g) }, nil
		case n >= 2 && len(t) >= 12+2*n:
			tab := make([]float64, n)
			for i := range tab {
				tab[i] = float64(binary.BigEndian.Uint16(t[12+2*i:])) / 65535
			}
			return func(v float64) float64 { // linear interpolation in the table
				x := v * float64(n-1)
				i := min(int(x), n-2)
				f := x - float64(i)
				return tab[i]*(1-f) + tab[i+1]*f
			}, nil
		}
	case "para":
		fn := int(binary.BigEndian.Uint16(t[8:]))
		np := []int{1, 3, 4, 5, 7}
		if fn >= len(np) || len(t) < 12+4*np[fn] {
			break
		}
		var p [7]float64
		for i := range np[fn] {
			p[i] = s15f16(t[12+4*i:])
		}
		g, a, b, c, d, e, f := p[0], p[1], p[2], p[3], p[4], p[5], p[6]
		pow := func(x float64) float64 {
			if x <= 0 {
				return 0
			}
			return math.Pow(x, g)
		}
		switch fn {
		case 0:
			return pow, nil
		case 1:
			return func(x float64) float64 {
				if x >= -b/a {
					return pow(a*x + b)
				}
				return 0
			}, nil
		case 2:
			return func(x float64) float64 {
				if x >= -b/a {
					return pow(a*x+b) + c
				}
				return c
			}, nil
		case 3:
			return func(x float64) float64 {
				if x >= d {
					return pow(a*x + b)
				}
				return c * x
			}, nil
		case 4:
			return func(x float64) float64 {
				if x >= d {
					return pow(a*x+b) + e
				}
				return c*x + f
			}, nil
		}
	}
	return nil, fmt.Errorf("tone curve of type %q not read", string(t[:4]))
}

// iccDesc is the profile's description (v2 textDescriptionType or v4 multiLocalizedUnicode),
// or "embedded" when it has none.
func iccDesc(p []byte) string {
	n := int(binary.BigEndian.Uint32(p[128:]))
	for i := 0; i < n && 132+12*i+12 <= len(p); i++ {
		e := p[132+12*i:]
		if string(e[:4]) != "desc" {
			continue
		}
		off, size := int(binary.BigEndian.Uint32(e[4:])), int(binary.BigEndian.Uint32(e[8:]))
		if off < 0 || size < 12 || off > len(p) || size > len(p)-off {
			break
		}
		t := p[off : off+size]
		var s string
		switch string(t[:4]) {
		case "desc":
			l := int(binary.BigEndian.Uint32(t[8:]))
			if l > 0 && 12+l <= len(t) {
				s = string(bytes.TrimRight(t[12:12+l], "\x00"))
			}
		case "mluc":
			if len(t) >= 28 && binary.BigEndian.Uint32(t[8:]) > 0 {
				l, o := int(binary.BigEndian.Uint32(t[20:])), int(binary.BigEndian.Uint32(t[24:]))
				if o >= 0 && l >= 0 && o+l <= len(t) {
					u := make([]uint16, l/2)
					for k := range u {
						u[k] = binary.BigEndian.Uint16(t[o+2*k:])
					}
					s = string(utf16.Decode(u))
				}
			}
		}
		s = strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f {
				return -1
			}
			return r
		}, s)
		if s = strings.TrimSpace(s); s != "" {
			return s[:min(len(s), 64)]
		}
	}
	return "embedded"
}

func invert3(m [9]float64) ([9]float64, bool) {
	a, b, c, d, e, f, g, h, i := m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8]
	det := a*(e*i-f*h) - b*(d*i-f*g) + c*(d*h-e*g)
	if math.Abs(det) < 1e-12 {
		return [9]float64{}, false
	}
	return [9]float64{
		(e*i - f*h) / det, (c*h - b*i) / det, (b*f - c*e) / det,
		(f*g - d*i) / det, (a*i - c*g) / det, (c*d - a*f) / det,
		(d*h - e*g) / det, (b*g - a*h) / det, (a*e - b*d) / det,
	}, true
}

func mul3(a, b [9]float64) [9]float64 {
	var o [9]float64
	for r := range 3 {
		for c := range 3 {
			o[3*r+c] = a[3*r]*b[c] + a[3*r+1]*b[3+c] + a[3*r+2]*b[6+c]
		}
	}
	return o
}

// apply converts an image that render made to sRGB, as *image.RGBA (premultiplied, as render
// makes it; colour is converted on the un-premultiplied values). A gray image is returned as it is.
func (c *colourConv) apply(m image.Image) image.Image {
	b := m.Bounds()
	var out *image.RGBA
	switch s := m.(type) {
	case *image.RGBA:
		out = s
	case *image.YCbCr:
		out = image.NewRGBA(b)
		for y := b.Min.Y; y < b.Max.Y; y++ {
			row := out.Pix[out.PixOffset(b.Min.X, y):]
			yi := s.YOffset(b.Min.X, y)
			for x := b.Min.X; x < b.Max.X; x++ {
				ci := s.COffset(x, y)
				r, g, bb := color.YCbCrToRGB(s.Y[yi], s.Cb[ci], s.Cr[ci])
				k := 4 * (x - b.Min.X)
				row[k], row[k+1], row[k+2], row[k+3] = r, g, bb, 255
				yi++
			}
		}
	default:
		return m
	}
	W := b.Dx()
	lut := encodeLUT()
	scale := float32(len(lut) - 1)
	for y := 0; y < b.Dy(); y++ {
		row := out.Pix[y*out.Stride : y*out.Stride+4*W]
		for k := 0; k < len(row); k += 4 {
			p := row[k : k+4 : k+4]
			a := p[3]
			if a == 0 {
				continue
			}
			r, g, bb := p[0], p[1], p[2]
			if a != 255 { // un-premultiply
				r, g, bb = uint8(min(255, int(r)*255/int(a))), uint8(min(255, int(g)*255/int(a))), uint8(min(255, int(bb)*255/int(a)))
			}
			lr, lg, lb := c.lin[0][r], c.lin[1][g], c.lin[2][bb]
			var o [3]uint8
			for ch := range 3 {
				v := c.m[3*ch]*lr + c.m[3*ch+1]*lg + c.m[3*ch+2]*lb
				if !(v > 0) { // and NaN, from a curve that makes no sense
					v = 0
				} else if v > 1 {
					v = 1
				}
				o[ch] = lut[int(v*scale+0.5)]
			}
			if a != 255 {
				for ch := range o {
					o[ch] = uint8((int(o[ch])*int(a) + 127) / 255)
				}
			}
			p[0], p[1], p[2] = o[0], o[1], o[2]
		}
	}
	return out
}
