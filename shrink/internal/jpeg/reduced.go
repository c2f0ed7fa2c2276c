package jpeg

import (
	"errors"
	"image"
	"io"
	"math"
)

// DecodeReduced decodes a JPEG at 1/2^shift of its size in each direction (shift 1, 2 or 3):
// each output sample is the mean of the 2^shift x 2^shift samples the full decode would have
// there, computed from the block's coefficients by a smaller transform instead of the full
// inverse DCT followed by averaging. It differs from that by rounding: the full decode rounds
// and clips each sample before the mean, this only the mean.
//
// The result is what Decode returns (*image.YCbCr or *image.Gray, same subsampling) with
// bounds of ceil(width/2^shift) x ceil(height/2^shift); a sample on the right or bottom edge of
// an image whose size is not a multiple also averages the padding the encoder put past the
// edge. Images that Decode turns into CMYK or RGB are decoded at full size: used reports the
// shift that was applied (0 then).
func DecodeReduced(r io.Reader, shift int) (m image.Image, used int, err error) {
	if shift < 0 || shift > 3 {
		shift = 0
	}
	d := decoder{shift: uint(shift)}
	m, err = d.decode(r, false)
	if err == errNotReducible {
		return nil, 0, err
	}
	return m, int(d.shift), err
}

// errNotReducible is an image found to need a colour conversion only at full size after its
// first scan was decoded reduced; the caller decodes it with Decode.
var errNotReducible = errors.New("jpeg: this image decodes at full size only")

// reduceA are, for shift 1 and 2, the matrices that take a row (or column) of 8 dequantized
// coefficients to the means of each group of 2 (or 4) of the 8 samples the 1-D inverse DCT
// would give: A[g][u] = 1/k sum over x in group g of C(u)/2 cos((2x+1)u pi/16), C(0) = 1/sqrt 2,
// C(u) = 1 otherwise. Applied to rows and then columns it is the 2-D mean, since both the
// transform and the mean are separable and linear.
var reduceA = func() (a [3][4][8]float32) {
	for shift := 1; shift <= 2; shift++ {
		k := 1 << shift
		for g := 0; g < 8/k; g++ {
			for u := 0; u < 8; u++ {
				cu := 1.0
				if u == 0 {
					cu = 1 / math.Sqrt2
				}
				var s float64
				for x := g * k; x < (g+1)*k; x++ {
					s += cu / 2 * math.Cos(float64(2*x+1)*float64(u)*math.Pi/16)
				}
				a[shift][g][u] = float32(s / float64(k))
			}
		}
	}
	return a
}()

// reducedBlock writes the n x n means (n = 8>>shift) of block b's inverse DCT to dst, level
// shifted and clipped as reconstructBlock does. b is dequantized, in natural order.
func reducedBlock(b *block, shift uint, dst []byte, stride int) {
	n := 8 >> shift
	if shift == 3 { // one mean for the block: the DC term alone
		dst[0] = levelShift(idctDC(b[0]))
		return
	}
	a := &reduceA[shift]
	// Rows: t[v][g] is row v of the coefficients taken to group means across.
	var t [8][4]float32
	for v := 0; v < 8; v++ {
		row := b[8*v : 8*v+8 : 8*v+8]
		if row[1]|row[2]|row[3]|row[4]|row[5]|row[6]|row[7] == 0 {
			if row[0] == 0 {
				continue
			}
			c := float32(row[0])
			for g := 0; g < n; g++ {
				t[v][g] = c * a[g][0]
			}
			continue
		}
		for g := 0; g < n; g++ {
			ag := &a[g]
			t[v][g] = float32(row[0])*ag[0] + float32(row[1])*ag[1] + float32(row[2])*ag[2] +
				float32(row[3])*ag[3] + float32(row[4])*ag[4] + float32(row[5])*ag[5] +
				float32(row[6])*ag[6] + float32(row[7])*ag[7]
		}
	}
	// Columns.
	for gy := 0; gy < n; gy++ {
		ay := &a[gy]
		out := dst[gy*stride : gy*stride+n]
		for gx := range out {
			s := ay[0]*t[0][gx] + ay[1]*t[1][gx] + ay[2]*t[2][gx] + ay[3]*t[3][gx] +
				ay[4]*t[4][gx] + ay[5]*t[5][gx] + ay[6]*t[6][gx] + ay[7]*t[7][gx]
			v := s + 128.5
			switch {
			case v <= 0:
				out[gx] = 0
			case v >= 255:
				out[gx] = 255
			default:
				out[gx] = uint8(v)
			}
		}
	}
}
