package shrink

import (
	"bytes"
	"image"
	"os"
	"path/filepath"
	"testing"

	"github.com/attachctl/attachctl/manifest"
)

// FuzzRecord feeds arbitrary bytes through the whole decode path: header, animation and EXIF
// scans, decoders, resize and encode. It must never panic, never fail with an error (a file that
// does not decode is asis), and whatever it writes is within both limits. The seeds run in every
// plain `go test`.
func FuzzRecord(f *testing.F) {
	f.Add(encodePNG(f, screenshot(40, 30)))
	f.Add(encodeJPEG(f, photo(40, 30, 1), 80))
	f.Add(withExif(encodeJPEG(f, photo(30, 20, 2), 80), 6))
	f.Add(pngBomb(100000, 100000))
	f.Add(pngBomb(0, 5))
	f.Add(animatedGIF(f))
	f.Add(encodePNG(f, screenshot(40, 30))[:60])
	f.Add([]byte("GIF89a\x01\x00\x01\x00\x80\x00\x00"))
	f.Add([]byte("RIFF\x20\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Add([]byte("II*\x00\x08\x00\x00\x00\x01\x00\x12\x01\x03\x00\x01\x00\x00\x00\x09\x00"))
	f.Add([]byte("BM"))
	f.Add(withICC(encodeJPEG(f, photo(30, 20, 3), 80), makeICC("Adobe RGB (1998)", adobeD50, gammaCurve(adobeGamma))))
	f.Add(pngWithICC(f, encodePNG(f, screenshot(20, 10)), makeICC("x", adobeD50, []byte{0, 0, 0, 0})))
	for _, p := range []string{"testdata/video-001.cmyk.jpeg", "testdata/video-001.q50.410.jpeg"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "in")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		rec := &manifest.Record{Path: p, Name: "in.png", Kind: manifest.KindImage}
		opts := Options{OutDir: filepath.Join(dir, "out"), MaxEdge: 16, MaxBytes: 4000, MaxPixels: 1 << 20}
		if err := Record(rec, opts); err != nil {
			t.Fatalf("error: %v", err)
		}
		if rec.Shrink == nil {
			t.Fatal("no shrink object")
		}
		switch rec.Shrink.Action {
		case Kept, AsIs:
			if rec.Path != p {
				t.Fatal("kept/asis moved the path")
			}
		case Resized, Reencoded:
			b, err := os.ReadFile(rec.Path)
			if err != nil || int64(len(b)) > opts.MaxBytes || int64(len(b)) != rec.Size {
				t.Fatalf("output %d bytes, record %d, err %v", len(b), rec.Size, err)
			}
			cfg, _, err := image.DecodeConfig(bytes.NewReader(b))
			if err != nil || max(cfg.Width, cfg.Height) > opts.MaxEdge {
				t.Fatalf("output %dx%d: %v", cfg.Width, cfg.Height, err)
			}
		default:
			t.Fatalf("action %q", rec.Shrink.Action)
		}
	})
}

// BenchmarkResize: the area-averaging resampler on a camera-sized YCbCr 4:2:0 image to 2000 px.
func BenchmarkResize(b *testing.B) {
	src := image.NewYCbCr(image.Rect(0, 0, 4032, 3024), image.YCbCrSubsampleRatio420)
	for i := range src.Y {
		src.Y[i] = uint8(i * 7)
	}
	b.SetBytes(int64(len(src.Y)))
	for b.Loop() {
		resize(src, 2000, 1500)
	}
}

// BenchmarkResizeRGBA: the same from a screenshot-sized RGBA image.
func BenchmarkResizeRGBA(b *testing.B) {
	src := image.NewRGBA(image.Rect(0, 0, 2560, 1600))
	for i := range src.Pix {
		src.Pix[i] = uint8(i * 7)
	}
	b.SetBytes(int64(len(src.Pix)))
	for b.Loop() {
		resize(src, 2000, 1250)
	}
}

// BenchmarkShrinkPhoto: a whole Record on a 4032x3024 JPEG photo: read, hash, decode, resize,
// encode, write. The output is removed each time so nothing is reused.
func BenchmarkShrinkPhoto(b *testing.B) {
	benchRecord(b, "photo.jpg", encodeJPEG(b, photo(4032, 3024, 1), 92))
}

// BenchmarkShrinkScreenshot: a whole Record on a 2560x1600 PNG screenshot.
func BenchmarkShrinkScreenshot(b *testing.B) {
	benchRecord(b, "shot.png", encodePNG(b, screenshot(2560, 1600)))
}

func benchRecord(b *testing.B, name string, data []byte) {
	dir := b.TempDir()
	out := filepath.Join(dir, "out")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		rec := record(b, dir, name, data)
		if err := Record(rec, Options{OutDir: out}); err != nil {
			b.Fatal(err)
		}
		os.RemoveAll(out)
	}
}

// FuzzICC reads arbitrary bytes as an ICC profile: never a panic, and a conversion it returns
// maps every value into range.
func FuzzICC(f *testing.F) {
	f.Add(makeICC("Adobe RGB (1998)", adobeD50, gammaCurve(adobeGamma)))
	f.Add(makeICC("table", adobeD50, []byte{0, 0, 0, 3, 0, 0, 0x80, 0, 0xff, 0xff}))
	f.Add(makeICC("para", adobeD50, []byte{0, 3, 0, 0, 0, 2, 0x66, 0x66, 0, 0, 0xf2, 0xa7, 0, 0, 0x0d, 0x59, 0, 0, 0x13, 0xd0, 0, 0, 0x0a, 0x5b}))
	f.Fuzz(func(t *testing.T, p []byte) {
		c := iccColour(p)
		if c.conv == nil {
			return
		}
		m := image.NewRGBA(image.Rect(0, 0, 16, 16))
		for i := range m.Pix {
			m.Pix[i] = uint8(i * 37)
		}
		c.conv.apply(m)
	})
}
