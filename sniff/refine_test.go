package sniff

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf16"

	"github.com/attachctl/attachctl/manifest"
)

// wide encodes s in UTF-16 or UTF-32, little or big endian, with its byte order mark.
func wide(s string, bits int, big bool) []byte {
	var order binary.AppendByteOrder = binary.LittleEndian
	if big {
		order = binary.BigEndian
	}
	var b []byte
	if bits == 16 {
		for _, u := range utf16.Encode(append([]rune{0xfeff}, []rune(s)...)) {
			b = order.AppendUint16(b, u)
		}
		return b
	}
	for _, r := range append([]rune{0xfeff}, []rune(s)...) {
		b = order.AppendUint32(b, uint32(r))
	}
	return b
}

// ebml is one Matroska element: its ID, a one-byte size (payloads here are short) and payload.
func ebml(id []byte, payload ...[]byte) []byte {
	p := bytes.Join(payload, nil)
	if len(p) > 126 {
		panic("payload too long for a one-byte size")
	}
	return append(append(append([]byte(nil), id...), 0x80|byte(len(p))), p...)
}

// webm is a minimal WebM file whose tracks have these codec IDs (V_VP9, A_OPUS…).
func webm(codecs ...string) []byte {
	header := ebml([]byte{0x1a, 0x45, 0xdf, 0xa3}, ebml([]byte{0x42, 0x86}, []byte{1}), ebml([]byte{0x42, 0x82}, []byte("webm")),
		ebml([]byte{0x42, 0x87}, []byte{4}), ebml([]byte{0x42, 0x85}, []byte{2}))
	var entries [][]byte
	for i, c := range codecs {
		typ := byte(2)
		if c[0] == 'V' {
			typ = 1
		}
		entries = append(entries, ebml([]byte{0xae}, ebml([]byte{0xd7}, []byte{byte(i + 1)}), ebml([]byte{0x83}, []byte{typ}), ebml([]byte{0x86}, []byte(c))))
	}
	tracks := ebml([]byte{0x16, 0x54, 0xae, 0x6b}, entries...)
	info := ebml([]byte{0x15, 0x49, 0xa9, 0x66}, ebml([]byte{0x2a, 0xd7, 0xb1}, []byte{0x0f, 0x42, 0x40}))
	segment := append([]byte{0x18, 0x53, 0x80, 0x67, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, append(info, tracks...)...)
	cluster := append([]byte{0x1f, 0x43, 0xb6, 0x75, 0x88}, bytes.Repeat([]byte{0xa3}, 8)...)
	return append(append(header, segment...), cluster...)
}

// Kinds people send that a first look gets wrong: a browser's voice note (audio-only WebM) is
// audio; UTF-16 and UTF-32 text with a byte order mark is text, its charset in the mime; a DWG
// drawing is not a raster image. Both ways of sniffing (Fill on a file, Content on bytes) agree.
func TestKindsPeopleSend(t *testing.T) {
	text := "Line one: café, 中文, 🎉\r\nline two\r\n"
	dwg := append([]byte("AC1032"), bytes.Repeat([]byte{0, 0x1f, 0x80, 0x33}, 64)...)
	unpaired := wide("ok", 16, false)
	unpaired = append(unpaired, 0x00, 0xd8, 'x', 0) // a high surrogate, then not a low one
	for _, c := range []struct {
		name       string
		data       []byte
		mime, kind string
	}{
		{"voice note", webm("A_OPUS"), "audio/webm", manifest.KindAudio},
		{"voice note, two audio tracks", webm("A_OPUS", "A_VORBIS"), "audio/webm", manifest.KindAudio},
		{"screen recording", webm("V_VP9", "A_OPUS"), "video/webm", manifest.KindVideo},
		{"silent video", webm("V_VP8"), "video/webm", manifest.KindVideo},
		{"UTF-16LE", wide(text, 16, false), "text/plain; charset=utf-16le", manifest.KindText},
		{"UTF-16BE", wide(text, 16, true), "text/plain; charset=utf-16be", manifest.KindText},
		{"UTF-32LE", wide(text, 32, false), "text/plain; charset=utf-32le", manifest.KindText},
		{"UTF-32BE", wide(text, 32, true), "text/plain; charset=utf-32be", manifest.KindText},
		{"UTF-16 with an unpaired surrogate", unpaired, "application/octet-stream", manifest.KindBinary},
		{"UTF-16 with a NUL", wide("a\x00b", 16, false), "application/octet-stream", manifest.KindBinary},
		{"UTF-16 cut in a code unit", wide(text, 16, false)[:9], "application/octet-stream", manifest.KindBinary},
		{"UTF-32 past U+10FFFF", append(wide("a", 32, false), 0, 0, 0x11, 0), "application/octet-stream", manifest.KindBinary},
		{"DWG", dwg, "image/vnd.dwg", manifest.KindBinary},
	} {
		t.Run(c.name, func(t *testing.T) {
			if mime, kind := Content(c.data, true); mime != c.mime || kind != c.kind {
				t.Errorf("Content: %s %s, want %s %s", mime, kind, c.mime, c.kind)
			}
			p := filepath.Join(t.TempDir(), "f")
			if err := os.WriteFile(p, c.data, 0o600); err != nil {
				t.Fatal(err)
			}
			rec := &manifest.Record{Path: p}
			if err := Fill(rec, Options{}); err != nil {
				t.Fatal(err)
			}
			if rec.Mime != c.mime || rec.Kind != c.kind || rec.Width != 0 {
				t.Errorf("Fill: %s %s %dx%d, want %s %s", rec.Mime, rec.Kind, rec.Width, rec.Height, c.mime, c.kind)
			}
			if c.kind == manifest.KindText {
				if got := string(DecodeText(c.data)); got != text {
					t.Errorf("DecodeText: %q, want %q", got, text)
				}
			}
		})
	}
	// The whole-file check (upload's one pass) judges wide text chunk by chunk, code units cut
	// anywhere.
	for _, chunk := range []int{1, 3, 5, 4096} {
		var tx Text
		data := wide(text, 16, true)
		for i := 0; i < len(data); i += chunk {
			tx.Observe(data[i:min(i+chunk, len(data))])
		}
		rec := &manifest.Record{Mime: "text/plain; charset=utf-16be", Kind: manifest.KindText}
		tx.Settle(rec)
		if rec.Kind != manifest.KindText {
			t.Fatalf("chunks of %d: settled as %s", chunk, rec.Kind)
		}
	}
}
