package jpeg

import (
	"errors"
	"image"
	"io"
)

// DecodeReduced decodes a JPEG at 1/2^shift of its size in each direction (shift 1, 2 or 3):
// each output sample is the mean of the 2^shift x 2^shift samples the full decode would have
// there. At 1/8 that is the block's DC term alone, with no inverse DCT. At 1/2 and 1/4 it is
// the same integer inverse DCT as Decode's, averaged before rounding and clipping: the exact
// mean needs all eight frequencies each way (a 4x4 transform of the low coefficients would be
// another filter), so what is saved is the samples never stored, clipped or resampled. It
// differs from Decode followed by averaging by rounding, and where Decode clipped a sample.
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

// reducedBlock writes the means of block b's inverse DCT over groups of 2^shift x 2^shift
// samples to dst, level shifted and clipped as reconstructBlock does. b is dequantized, in
// natural order; idct overwrites it.
func reducedBlock(b *block, shift uint, dst []byte, stride int) {
	if shift == 3 { // one mean for the block: the DC term alone
		dst[0] = levelShift(idctDC(b[0]))
		return
	}
	// The inverse DCT the full decode does (the integer one, zero rows skipped), then the mean
	// of each group of its outputs before they are rounded and clipped to samples.
	idct(b)
	if shift == 1 { // the common case (a 12 MP photo to 2000 px), unrolled
		for gy := 0; gy < 4; gy++ {
			r0 := b[16*gy : 16*gy+8 : 16*gy+8]
			r1 := b[16*gy+8 : 16*gy+16 : 16*gy+16]
			out := dst[gy*stride : gy*stride+4 : gy*stride+4]
			out[0] = levelShift((r0[0] + r0[1] + r1[0] + r1[1] + 2) >> 2)
			out[1] = levelShift((r0[2] + r0[3] + r1[2] + r1[3] + 2) >> 2)
			out[2] = levelShift((r0[4] + r0[5] + r1[4] + r1[5] + 2) >> 2)
			out[3] = levelShift((r0[6] + r0[7] + r1[6] + r1[7] + 2) >> 2)
		}
		return
	}
	for gy := 0; gy < 2; gy++ { // shift 2: four groups of 4x4
		out := dst[gy*stride : gy*stride+2 : gy*stride+2]
		for gx := range out {
			var sum int32
			for y := 4 * gy; y < 4*gy+4; y++ {
				r := b[8*y+4*gx : 8*y+4*gx+4 : 8*y+4*gx+4]
				sum += r[0] + r[1] + r[2] + r[3]
			}
			out[gx] = levelShift((sum + 8) >> 4)
		}
	}
}
