package jpeg

import (
	"bytes"
	stdjpeg "image/jpeg"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecode: no input makes Decode panic, and on every input it does what image/jpeg.Decode
// does: the same error, or the same image to the byte. The seeds (small JPEGs of every kind
// the tests have: baseline, progressive, restart, grayscale, CMYK, and a few broken ones) run
// in every plain `go test`; `go test -fuzz FuzzDecode` explores from them.
func FuzzDecode(f *testing.F) {
	for _, m := range []struct {
		w, h int
		q    int
	}{{1, 1, 50}, {17, 9, 1}, {24, 16, 85}, {33, 31, 100}} {
		f.Add(encode(f, photoImage(m.w, m.h, uint64(m.q), 6), m.q))
		f.Add(encode(f, grayOf(screenImage(m.w, m.h)), m.q))
	}
	for _, seed := range testSeeds(f) {
		f.Add(seed)
	}
	names, _ := filepath.Glob("testdata/*.jpeg")
	for _, n := range names {
		if b, err := os.ReadFile(n); err == nil && len(b) < 8000 {
			f.Add(b)
		}
	}
	f.Add(ycck(f))
	small := encode(f, photoImage(16, 16, 1, 6), 75)
	f.Add(small[:len(small)/2])
	f.Add(append(bytes.Clone(small[:len(small)-2]), 0xff, 0x00, 0x12, 0xff, 0xd9))

	f.Fuzz(func(t *testing.T, data []byte) {
		// Both decoders allocate the image the header asks for; keep that small. An input
		// whose header does not decode fails before any allocation in both.
		if cfg, err := stdjpeg.DecodeConfig(bytes.NewReader(data)); err == nil && cfg.Width*cfg.Height > 1<<20 {
			return
		}
		checkSame(t, "input", data)
		// The reduced decode must not panic either, and fails only where Decode fails (or
		// where the image turns out to need its full size).
		_, _, rerr := DecodeReduced(bytes.NewReader(data), 1+len(data)%3)
		if _, err := Decode(bytes.NewReader(data)); err == nil && rerr != nil && rerr != errNotReducible {
			t.Errorf("DecodeReduced: %v where Decode succeeds", rerr)
		}
	})
}
