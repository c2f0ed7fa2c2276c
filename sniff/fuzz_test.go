package sniff

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

// FuzzSniffBytes feeds arbitrary bytes to the header parsers and the text check. No input may
// panic; the image header parse must not depend on how much of the file is in the head (the rest
// is reached by ReadAt); and the chunked text check must agree with utf8.Valid and a NUL search
// over the whole input, wherever it is split. The seed corpus (the samples and hand-made headers)
// runs in plain `go test`.
func FuzzSniffBytes(f *testing.F) {
	entries, _ := os.ReadDir(samples)
	for _, e := range entries {
		if data, err := os.ReadFile(filepath.Join(samples, e.Name())); err == nil {
			f.Add(data, uint16(7))
		}
	}
	f.Add(jpegWith(640, 480, exifSegment(binary.LittleEndian, 6, 3)), uint16(3))
	f.Add(jpegWith(1, 1, appSegment(0xe2, 100), exifSegment(binary.BigEndian, 8, 4)), uint16(50))
	f.Add([]byte("MM\x00*\x00\x00\x00\x08\xff\xff"), uint16(1))
	f.Add([]byte("II*\x00\xff\xff\xff\xff"), uint16(1))
	f.Add([]byte("RIFF\x00\x00\x00\x00WEBPVP8X"), uint16(2))
	f.Add([]byte("\xff\xd8\xff\xe1\x00\x08Exif\x00\x00"), uint16(4))
	f.Add([]byte("abc\xe3\x81\x82\xf0\x9f"), uint16(4))
	f.Add(heifFile("heic", ispe(4032, 3024), irot(3), mkbox("colr", []byte("prof"), []byte("icc"))), uint16(40))
	f.Add(heifFile("avif", ispe(40, 30), irot(1), imir(0)), uint16(300))
	f.Fuzz(func(t *testing.T, data []byte, split uint16) {
		full := parseImage(&header{head: data, size: int64(len(data))})
		n := min(int(split), len(data))
		short := parseImage(&header{head: data[:n], size: int64(len(data)), ra: bytes.NewReader(data)})
		if short != full && len(data) < maxExtraReads*4 { // budget of reads past head may run out on long inputs
			t.Errorf("head of %d bytes gives %+v, all bytes give %+v", n, short, full)
		}
		if full.Width < 0 || full.Height < 0 || full.Orientation < 0 || full.Orientation > 8 {
			t.Errorf("out of range: %+v", full)
		}
		var tc textCheck
		tc.write(data[:n])
		tc.write(data[n:])
		want := utf8.Valid(data) && bytes.IndexByte(data, 0) < 0
		if got := tc.text(true); got != want {
			t.Errorf("text check split at %d says %v, want %v", n, got, want)
		}
	})
}
