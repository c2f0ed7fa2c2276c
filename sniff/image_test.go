package sniff

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/attachctl/attachctl/manifest"
)

// exifTIFF is a minimal EXIF payload: a TIFF header and IFD0 with one Orientation entry.
func exifTIFF(bo binary.ByteOrder, o uint16) []byte {
	var b bytes.Buffer
	if bo == binary.LittleEndian {
		b.WriteString("II*\x00")
	} else {
		b.WriteString("MM\x00*")
	}
	binary.Write(&b, bo, uint32(8))
	binary.Write(&b, bo, uint16(1))
	binary.Write(&b, bo, [2]uint16{0x0112, 3}) // Orientation, SHORT
	binary.Write(&b, bo, uint32(1))            // count
	binary.Write(&b, bo, [2]uint16{o, 0})      // the value, left-justified
	binary.Write(&b, bo, uint32(0))
	return b.Bytes()
}

func pngChunk(typ string, data []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, uint32(len(data)))
	b.WriteString(typ)
	b.Write(data)
	b.Write([]byte{0, 0, 0, 0}) // CRC, not checked by the header parser
	return b.Bytes()
}

func riffChunk(typ string, data []byte) []byte {
	var b bytes.Buffer
	b.WriteString(typ)
	binary.Write(&b, binary.LittleEndian, uint32(len(data)))
	b.Write(data)
	if len(data)%2 == 1 {
		b.WriteByte(0)
	}
	return b.Bytes()
}

func TestImageOrientationInPNGAndWebP(t *testing.T) {
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr, 30)
	binary.BigEndian.PutUint32(ihdr[4:], 20)
	png := func(chunks ...[]byte) []byte {
		return append([]byte("\x89PNG\r\n\x1a\n"), bytes.Join(append([][]byte{pngChunk("IHDR", ihdr)}, chunks...), nil)...)
	}
	vp8x := []byte{0x08, 0, 0, 0, 29, 0, 0, 19, 0, 0} // EXIF flag, canvas 30x20
	webp := func(chunks ...[]byte) []byte {
		body := append([]byte("WEBP"), bytes.Join(chunks, nil)...)
		var b bytes.Buffer
		b.WriteString("RIFF")
		binary.Write(&b, binary.LittleEndian, uint32(len(body)))
		b.Write(body)
		return b.Bytes()
	}
	tests := []struct {
		name    string
		data    []byte
		w, h, o int
	}{
		{"png eXIf little-endian", png(pngChunk("eXIf", exifTIFF(binary.LittleEndian, 6)), pngChunk("IDAT", nil)), 30, 20, 6},
		{"png eXIf big-endian", png(pngChunk("pHYs", make([]byte, 9)), pngChunk("eXIf", exifTIFF(binary.BigEndian, 8))), 30, 20, 8},
		{"png eXIf after IDAT does not count", png(pngChunk("IDAT", make([]byte, 5)), pngChunk("eXIf", exifTIFF(binary.BigEndian, 3))), 30, 20, 0},
		{"png without eXIf", png(pngChunk("IDAT", nil)), 30, 20, 0},
		{"webp EXIF after odd-sized image data", webp(riffChunk("VP8X", vp8x), riffChunk("VP8L", make([]byte, 7)), riffChunk("EXIF", exifTIFF(binary.LittleEndian, 5))), 30, 20, 5},
		{"webp EXIF with Exif prefix", webp(riffChunk("VP8X", vp8x), riffChunk("EXIF", append([]byte("Exif\x00\x00"), exifTIFF(binary.BigEndian, 7)...))), 30, 20, 7},
		{"webp without the EXIF flag", webp(riffChunk("VP8X", append([]byte{0}, vp8x[1:]...)), riffChunk("EXIF", exifTIFF(binary.LittleEndian, 5))), 30, 20, 0},
		{"webp EXIF chunk cut short", webp(riffChunk("VP8X", vp8x), []byte("EXIF\xff\xff\x00\x00")), 30, 20, 0},
	}
	for _, tt := range tests {
		w, h, o := Image(tt.data)
		if w != tt.w || h != tt.h || o != tt.o {
			t.Errorf("%s: got %dx%d orientation %d, want %dx%d orientation %d", tt.name, w, h, o, tt.w, tt.h, tt.o)
		}
	}
}

func TestTextSettle(t *testing.T) {
	tests := []struct {
		name, mime, kind   string
		stream             [][]byte
		wantMime, wantKind string
	}{
		{"text stays text", "text/plain", "text", [][]byte{[]byte("héllo "), []byte("wörld")}, "text/plain", "text"},
		{"a rune split across observes", "text/plain", "text", [][]byte{{0xc3}, {0xa9}}, "text/plain", "text"},
		{"a NUL in the tail", "text/plain", "text", [][]byte{[]byte("abc"), {0}}, "application/octet-stream", "binary"},
		{"JSON with a binary tail", "application/json", "text", [][]byte{[]byte(`{"a":1}`), {0xff, 0xfe}}, "application/octet-stream", "binary"},
		{"the format decides: PNG stays image", "image/png", "image", [][]byte{{0, 0xff}}, "image/png", "image"},
		{"the format decides: PDF stays document", "application/pdf", "document", [][]byte{{0}}, "application/pdf", "document"},
		{"a restart forgets", "text/plain", "text", [][]byte{{0}, nil, []byte("fine")}, "text/plain", "text"},
		{"cut in a rune at the end", "text/plain", "text", [][]byte{[]byte("ab"), {0xe2, 0x82}}, "application/octet-stream", "binary"},
	}
	for _, tt := range tests {
		var tx Text
		for _, p := range tt.stream {
			tx.Observe(p)
		}
		rec := &manifest.Record{Path: "f", Mime: tt.mime, Kind: tt.kind}
		tx.Settle(rec)
		if rec.Mime != tt.wantMime || rec.Kind != tt.wantKind {
			t.Errorf("%s: got %s %s, want %s %s", tt.name, rec.Mime, rec.Kind, tt.wantMime, tt.wantKind)
		}
	}
}
