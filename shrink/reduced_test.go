package shrink

import (
	"bytes"
	"fmt"
	"testing"

	fastjpeg "github.com/attachctl/attachctl/shrink/internal/jpeg"
)

// TestReducedDecodeAgreesWithFull: shrinking a photo from a JPEG decoded at half, a quarter or
// an eighth of its size (each sample the mean of those it stands for) and area-averaging the
// rest gives nearly what area-averaging the full decode gives. They differ where a destination
// pixel's edge cuts a group of samples, which the reduced path takes as uniform.
func TestReducedDecodeAgreesWithFull(t *testing.T) {
	t.Parallel() // pixels only: see TestRecordTable
	for _, tt := range []struct {
		w, h, dw, dh, shift int
		minPSNR             float64
	}{
		// Just over reduceMinPixels, where a reduced decode begins: the paths and ratios of
		// bigger photos at a fraction of the pixels to make and decode twice.
		{1210, 908, 600, 450, 1, 40}, // the ratio of a 12 MP photo to 2000 px
		{1280, 832, 320, 208, 2, 45}, // exact quarters: only rounding differs
		{1280, 832, 140, 91, 3, 40},
		{1200, 900, 500, 375, 1, 40},
		{1000, 1000, 400, 400, 0, 0}, // under a megapixel: decoded whole
	} {
		t.Run(fmt.Sprintf("%dx%d to %dx%d", tt.w, tt.h, tt.dw, tt.dh), func(t *testing.T) {
			data := encodeJPEG(t, photo(tt.w, tt.h, uint64(tt.w)), 90)
			if s := reduceShift(tt.w, tt.h, tt.dw, tt.dh); s != tt.shift {
				t.Fatalf("shift %d, want %d", s, tt.shift)
			}
			if tt.shift == 0 {
				return
			}
			full, err := fastjpeg.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			red, used, err := fastjpeg.DecodeReduced(bytes.NewReader(data), tt.shift)
			if err != nil || used != tt.shift {
				t.Fatal(used, err)
			}
			exact := resize(full, tt.dw, tt.dh)
			got := resize(red, tt.dw, tt.dh)
			ref := refArea(exact, tt.dw, tt.dh)
			p := psnr(got, ref)
			worst := maxDiff(got, ref)
			t.Logf("PSNR %.1f dB, worst %.0f levels, against the full decode's", p, worst)
			if p < tt.minPSNR {
				t.Errorf("PSNR %.1f dB, want >= %.0f", p, tt.minPSNR)
			}
		})
	}
}
