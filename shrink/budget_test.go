package shrink

import (
	"encoding/binary"
	"fmt"
	"image"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// sofJPEG is the start of a JPEG: SOI and a frame header of the given type, size and components'
// sampling factors (one byte each, H<<4|V).
func sofJPEG(marker byte, w, h int, sampling ...byte) []byte {
	p := []byte{8}
	p = binary.BigEndian.AppendUint16(p, uint16(h))
	p = binary.BigEndian.AppendUint16(p, uint16(w))
	p = append(p, byte(len(sampling)))
	for i, hv := range sampling {
		p = append(p, byte(i+1), hv, 0)
	}
	seg := append([]byte{0xff, marker}, binary.BigEndian.AppendUint16(nil, uint16(len(p)+2))...)
	return append(append([]byte{0xff, 0xd8}, seg...), p...)
}

// TestDecodeNeed: the header tells what a decode will hold: a progressive JPEG keeps every
// coefficient (4 bytes a sample) beside its planes, a baseline one only its planes.
func TestDecodeNeed(t *testing.T) {
	const W, H = 8000, 6000
	const px = W * H
	tests := []struct {
		name, format string
		data         []byte
		want         int64 // the decoder's part, without the source and the output
	}{
		{"baseline 4:2:0", "jpeg", sofJPEG(0xc0, W, H, 0x22, 0x11, 0x11), px * 3 / 2},
		{"progressive 4:2:0", "jpeg", sofJPEG(0xc2, W, H, 0x22, 0x11, 0x11), 5 * px * 3 / 2},
		{"baseline 4:4:4", "jpeg", sofJPEG(0xc0, W, H, 0x11, 0x11, 0x11), 3 * px},
		{"grey", "jpeg", sofJPEG(0xc0, W, H, 0x11), px},
		{"CMYK", "jpeg", sofJPEG(0xc0, W, H, 0x11, 0x11, 0x11, 0x11), 8 * px},
		{"no frame header", "jpeg", []byte{0xff, 0xd8}, 8 * px},
		{"PNG RGBA", "png", pngBomb(W, H), 4 * px},
		{"HEIC", "heic", nil, (heicWasmPerPixel+heicCopyPerPixel)*px + wasmBase},
		{"AVIF", "avif", []byte("ftypavif"), (avifWasmPerPixel+avifCopyPerPixel)*px + wasmBase + 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decodeNeed(tt.format, image.Config{Width: W, Height: H}, tt.data, 0, 2000, 1500, 500_000)
			want := tt.want + int64(len(tt.data)) + 8*2000*1500 + 2*500_000
			if got != want {
				t.Errorf("need %d MiB, want %d MiB", got>>20, want>>20)
			}
		})
	}
}

// TestMemoryBudget: decodes running at once never reserve more than MaxMemory between them, and
// they do run at once when there is room; an image that alone needs more is asis, with why.
func TestMemoryBudget(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	jpg := encodeJPEG(t, photo(600, 450, 9), 90)
	opts := Options{MaxEdge: 300, OutDir: out}
	need := decodeNeed("jpeg", image.Config{Width: 600, Height: 450}, jpg, 1, 300, 225, DefaultMaxBytes)

	t.Run("too large alone", func(t *testing.T) {
		rec := record(t, dir, "big.jpg", jpg)
		o := opts
		o.MaxMemory = need - 1
		if err := Record(rec, o); err != nil {
			t.Fatal(err)
		}
		if rec.Shrink.Action != AsIs || !strings.Contains(rec.Shrink.Reason, "over --max-memory") {
			t.Fatalf("shrink %+v", rec.Shrink)
		}
	})
	for _, fit := range []int64{1, 3} { // room for one decode at a time, then for three
		t.Run(fmt.Sprintf("room for %d", fit), func(t *testing.T) {
			o := opts
			o.MaxMemory = fit*need + need/2
			o.OutDir = filepath.Join(dir, fmt.Sprint("out", fit)) // nothing reused
			reserved.ResetPeak()
			var wg sync.WaitGroup
			for i := range 6 {
				rec := record(t, dir, fmt.Sprintf("p%d-%d.jpg", fit, i), encodeJPEG(t, photo(600, 450, uint64(i)), 90))
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := Record(rec, o); err != nil || rec.Shrink.Action != Resized {
						t.Errorf("%v %+v", err, rec.Shrink)
					}
				}()
			}
			wg.Wait()
			_, peak := reserved.Get()
			if peak > o.MaxMemory {
				t.Errorf("%d bytes reserved at once, over the budget of %d", peak, o.MaxMemory)
			}
			if peak < need {
				t.Errorf("peak %d: nothing was reserved", peak)
			}
		})
	}
}
