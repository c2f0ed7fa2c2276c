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
	f.Add(wide("héllo 中文\n", 16, false), uint16(3))
	f.Add(wide("héllo 🎉\n", 16, true), uint16(5))
	f.Add(wide("héllo\n", 32, false), uint16(6))
	f.Add(wide("héllo\n", 32, true), uint16(2))
	f.Add(webm("A_OPUS"), uint16(30))
	f.Add(webm("V_VP9", "A_OPUS"), uint16(30))
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
		if enc, bom := bomOf(data); enc != encUTF8 { // UTF-16 or UTF-32 with its byte order mark
			want = wideValid(data[bom:], enc)
		}
		Animated(data)
		audioOnlyMatroska(data)
		DecodeText(data)
		if got := tc.text(true); got != want {
			t.Errorf("text check split at %d says %v, want %v", n, got, want)
		}
	})
}

// wideValid is the reference for wideCheck: the whole of b, in one piece, is UTF-16 or UTF-32
// (enc) text with surrogates paired and no U+0000.
func wideValid(b []byte, enc int) bool {
	unit := 2
	if enc >= encUTF32LE {
		unit = 4
	}
	if len(b)%unit != 0 {
		return false
	}
	var rs []rune
	for i := 0; i < len(b); i += unit {
		switch enc {
		case encUTF16LE:
			rs = append(rs, rune(binary.LittleEndian.Uint16(b[i:])))
		case encUTF16BE:
			rs = append(rs, rune(binary.BigEndian.Uint16(b[i:])))
		case encUTF32LE:
			rs = append(rs, rune(binary.LittleEndian.Uint32(b[i:])))
		default:
			rs = append(rs, rune(binary.BigEndian.Uint32(b[i:])))
		}
	}
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == 0 || r > utf8.MaxRune || r < 0:
			return false
		case r >= 0xd800 && r < 0xdc00 && unit == 2:
			if i+1 >= len(rs) || rs[i+1] < 0xdc00 || rs[i+1] >= 0xe000 {
				return false
			}
			i++
		case r >= 0xd800 && r < 0xe000:
			return false
		}
	}
	return true
}
