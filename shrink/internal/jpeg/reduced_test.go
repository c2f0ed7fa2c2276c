package jpeg

import (
	"bytes"
	"fmt"
	"image"
	"testing"
)

// planesOf returns the sample planes of a decoded image, each with its stride and how many
// image pixels one sample covers across and down.
type plane struct {
	pix            []uint8
	stride, fx, fy int
}

func planesOf(t testing.TB, m image.Image) []plane {
	switch s := m.(type) {
	case *image.Gray:
		return []plane{{s.Pix, s.Stride, 1, 1}}
	case *image.YCbCr:
		fx, fy := 1, 1
		switch s.SubsampleRatio {
		case image.YCbCrSubsampleRatio422:
			fx = 2
		case image.YCbCrSubsampleRatio420:
			fx, fy = 2, 2
		case image.YCbCrSubsampleRatio440:
			fy = 2
		case image.YCbCrSubsampleRatio411:
			fx = 4
		case image.YCbCrSubsampleRatio410:
			fx, fy = 4, 2
		}
		return []plane{{s.Y, s.YStride, 1, 1}, {s.Cb, s.CStride, fx, fy}, {s.Cr, s.CStride, fx, fy}}
	}
	t.Fatalf("%T", m)
	return nil
}

// TestReducedIsAreaMean: DecodeReduced at 1/2, 1/4 and 1/8 gives, for every sample whose
// group lies inside the image, the mean of the k x k samples of the full decode within one
// level (where the full decode clipped a sample, a value within the group's range); its size is
// the full size divided by k, rounded up. Images that decode to CMYK or RGB come out at full
// size, identical to Decode.
func TestReducedIsAreaMean(t *testing.T) {
	inputs := generated(t)
	for name, b := range files(t) {
		inputs[name] = b
	}
	checked, groups, skipped := 0, 0, 0
	for _, name := range sortedKeys(inputs) {
		data := inputs[name]
		full, err := Decode(bytes.NewReader(data))
		if err != nil {
			continue
		}
		fb := full.Bounds()
		for shift := 1; shift <= 3; shift++ {
			k := 1 << shift
			red, used, err := DecodeReduced(bytes.NewReader(data), shift)
			if err != nil {
				t.Errorf("%s 1/%d: %v", name, k, err)
				continue
			}
			if _, ok := full.(*image.CMYK); ok || used == 0 {
				if used != 0 || !same(full, red) {
					t.Errorf("%s: %T at shift %d: want Decode's image", name, full, used)
				}
				continue
			}
			rb := red.Bounds()
			if rb.Dx() != (fb.Dx()+k-1)/k || rb.Dy() != (fb.Dy()+k-1)/k {
				t.Fatalf("%s 1/%d: %v from %v", name, k, rb, fb)
			}
			fp, rp := planesOf(t, full), planesOf(t, red)
			for i := range fp {
				f, r := fp[i], rp[i]
				// Samples of the plane whose k x k group of full samples lies in the image.
				sw, sh := fb.Dx()/(f.fx*k), fb.Dy()/(f.fy*k)
				for y := 0; y < sh; y++ {
					for x := 0; x < sw; x++ {
						sum, lo, hi := 0, 255, 0
						for yy := y * k; yy < (y+1)*k; yy++ {
							for xx := x * k; xx < (x+1)*k; xx++ {
								v := int(f.pix[yy*f.stride+xx])
								sum += v
								lo, hi = min(lo, v), max(hi, v)
							}
						}
						if got := int(r.pix[y*r.stride+x]); lo == 0 || hi == 255 {
							// The full decode clipped a sample, maybe from beyond the range
							// (ringing at a hard edge): its mean is of clipped values, the
							// reduced one of the transform's. It is still within the group.
							if got < lo-1 || got > hi+1 {
								t.Fatalf("%s 1/%d plane %d (%d,%d): %d, outside the group's %d..%d", name, k, i, x, y, got, lo, hi)
							}
							skipped++
							continue
						}
						groups++
						mean := float64(sum) / float64(k*k)
						d := int(abs(float64(r.pix[y*r.stride+x]) - mean))
						if d > 1 {
							t.Fatalf("%s 1/%d plane %d (%d,%d): %d, the mean is %.2f", name, k, i, x, y, r.pix[y*r.stride+x], mean)
						}
					}
				}
			}
			checked++
		}
	}
	if checked < 100 || groups < 500_000 {
		t.Fatalf("only %d images checked, %d groups compared and %d skipped", checked, groups, skipped)
	}
	t.Logf("%d reduced decodes, %d groups within one level of the mean, %d clipped groups within their range", checked, groups, skipped)
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

func same(a, b image.Image) bool { return fmt.Sprintf("%v", a) == fmt.Sprintf("%v", b) }
