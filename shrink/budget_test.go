package shrink

import (
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attachctl/attachctl/shrink/internal/heif"
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
		{"HEIC", "heic", nil, (heicReservePerPixel+heicCopyPerPixel)*px + wasmReserveBase},
		{"AVIF", "avif", []byte("ftypavif"), (avifReservePerPixel+avifCopyPerPixel)*px + wasmReserveBase + 8},
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

// TestReservationAccounting: for each HEIC and AVIF layout the tests have, what a decode reserves
// for its WebAssembly decoder covers what the decoder took (measured: heif.Memory's peak), with
// no growth, and is not the worst case of every layout (within twice the measure and 16 MiB); the
// hard limit is still the worst case. Two 12 MP decodes of either format fit the default budget.
func TestReservationAccounting(t *testing.T) {
	for _, name := range []string{"gradient-640x480.heic", "gradient-4000x3000.heic", "gradient-640x480.avif",
		"gradient-4000x3000.avif", "kimono.avif"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			p, ok := heifHeader(data)
			if !ok {
				t.Fatal("no HEIF header")
			}
			cfg := image.Config{Width: p.Width, Height: p.Height}
			res, most := wasmReserve(p.format, cfg, data), wasmLimit(p.format, cfg, data)
			grew := int64(0)
			heif.Memory.ResetPeak()
			_, _, err = decode(data, p.format, 0, heif.Limit{Max: most, Reserved: res, Grow: func(n int64) bool { grew += n; return true }})
			if err != nil {
				t.Fatal(err)
			}
			_, measured := heif.Memory.Get()
			t.Logf("%s %dx%d: reserved %.1f MiB, measured %.1f MiB (%.2f bytes a pixel), hard limit %.1f MiB",
				p.format, p.Width, p.Height, float64(res)/(1<<20), float64(measured)/(1<<20),
				float64(measured)/float64(p.Width*p.Height), float64(most)/(1<<20))
			if grew != 0 || measured > res {
				t.Errorf("the decoder took %d bytes, %d past the reservation of %d", measured, grew, res)
			}
			if res > 2*measured+16<<20 {
				t.Errorf("reserved %d MiB for %d MiB measured", res>>20, measured>>20)
			}
			if most < res {
				t.Errorf("hard limit %d under the reservation %d", most, res)
			}
		})
	}
	for _, format := range []string{"heic", "avif"} {
		data := make([]byte, 6<<20) // a camera's 12 MP file
		need := decodeNeed(format, image.Config{Width: 4032, Height: 3024}, data, 0, DefaultMaxEdge, DefaultMaxEdge*3/4, DefaultMaxBytes)
		if 2*need > DefaultMaxMemory {
			t.Errorf("%s: a 12 MP decode reserves %d MiB: two do not fit the default --max-memory", format, need>>20)
		}
	}
}

// TestReservationGrowth: a decode whose decoder needs more than its reservation takes the rest
// as its memory grows; refused, the decode stops with heif.ErrBudget, and Record decodes it again
// with its worst case reserved, never over the budget.
func TestReservationGrowth(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "gradient-640x480.heic"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := image.Config{Width: 640, Height: 480}
	most := wasmLimit("heic", cfg, data)
	grew := int64(0)
	if _, _, err := decode(data, "heic", 0, heif.Limit{Max: most, Reserved: 1, Grow: func(n int64) bool { grew += n; return true }}); err != nil || grew == 0 {
		t.Errorf("growth allowed: %v, grew %d bytes", err, grew)
	}
	if _, _, err := decode(data, "heic", 0, heif.Limit{Max: most, Reserved: 1}); !errors.Is(err, heif.ErrBudget) {
		t.Errorf("growth refused: %v, want heif.ErrBudget", err)
	}

	// A reservation that covers only the module's start, the budget held by others: the growth
	// is refused, the decode waits for its whole worst case and goes on.
	reserveFor = func(string, image.Config, []byte) int64 { return 1 }
	defer func() { reserveFor = wasmReserve }()
	dir := t.TempDir()
	rec := record(t, dir, "g.heic", data)
	opts := Options{MaxEdge: 300, OutDir: filepath.Join(dir, "out"), MaxMemory: 3 * most}
	need := decodeNeed("heic", cfg, data, 0, 300, 225, DefaultMaxBytes)
	hold := reserve(opts.MaxMemory, opts.MaxMemory-need) // room for the reservation, none for growth
	var once sync.Once
	defer once.Do(hold)
	done := make(chan error, 1)
	go func() { done <- Record(rec, opts) }()
	select {
	case err := <-done:
		t.Fatalf("decoded with no room to grow: %v %+v", err, rec.Shrink)
	case <-time.After(3 * time.Second):
	}
	resetPeaks()
	once.Do(hold)
	if err := <-done; err != nil || rec.Shrink == nil || rec.Shrink.Action != Resized {
		t.Fatalf("%v %+v", err, rec.Shrink)
	}
	if res, wasm := peaks(); res > opts.MaxMemory || wasm > res {
		t.Errorf("reserved %d, decoder memory %d, budget %d", res, wasm, opts.MaxMemory)
	}
}
