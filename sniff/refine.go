package sniff

import (
	"bytes"
	"encoding/binary"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/attachctl/attachctl/manifest"
)

// Text in UTF-16 or UTF-32 with a byte order mark is text too (docs/commands.md, "sniff": text is
// UTF-8 or has a BOM; a BOM says which encoding the bytes are in, so they are checked in it and the
// charset goes in the record's mime: "text/plain; charset=utf-16le"). Windows tools write UTF-16
// logs and exports that people attach.
const (
	encUTF8 = iota
	encUTF16LE
	encUTF16BE
	encUTF32LE
	encUTF32BE
)

var charsets = [...]string{"", "utf-16le", "utf-16be", "utf-32le", "utf-32be"}

// bomOf is the encoding a byte order mark at the start of p names, and the mark's length.
func bomOf(p []byte) (enc, n int) {
	switch {
	case bytes.HasPrefix(p, []byte{0xff, 0xfe, 0, 0}):
		return encUTF32LE, 4
	case bytes.HasPrefix(p, []byte{0, 0, 0xfe, 0xff}):
		return encUTF32BE, 4
	case bytes.HasPrefix(p, []byte{0xff, 0xfe}):
		return encUTF16LE, 2
	case bytes.HasPrefix(p, []byte{0xfe, 0xff}):
		return encUTF16BE, 2
	}
	return encUTF8, 0
}

// wideCheck judges UTF-16 or UTF-32 text as textCheck judges UTF-8: every code unit valid
// (surrogates paired, code points in range) and no U+0000, across chunks of any size.
type wideCheck struct {
	enc   int
	carry [4]byte
	n     int
	high  rune // a high surrogate waiting for its pair
	bad   bool
}

func (w *wideCheck) unit() int {
	if w.enc >= encUTF32LE {
		return 4
	}
	return 2
}

func (w *wideCheck) write(p []byte) {
	u := w.unit()
	for len(p) > 0 && !w.bad {
		if w.n > 0 || len(p) < u {
			c := copy(w.carry[w.n:u], p)
			w.n += c
			p = p[c:]
			if w.n < u {
				return
			}
			w.code(w.carry[:u])
			w.n = 0
			continue
		}
		w.code(p[:u])
		p = p[u:]
	}
}

func (w *wideCheck) code(b []byte) {
	var r rune
	switch w.enc {
	case encUTF16LE:
		r = rune(binary.LittleEndian.Uint16(b))
	case encUTF16BE:
		r = rune(binary.BigEndian.Uint16(b))
	case encUTF32LE:
		r = rune(binary.LittleEndian.Uint32(b))
	case encUTF32BE:
		r = rune(binary.BigEndian.Uint32(b))
	}
	isHigh, isLow := r >= 0xd800 && r < 0xdc00, r >= 0xdc00 && r < 0xe000
	switch {
	case w.enc <= encUTF16BE && w.high != 0:
		w.bad = !isLow
		w.high = 0
	case w.enc <= encUTF16BE && isHigh:
		w.high = r
	case r == 0 || isHigh || isLow || r > utf8.MaxRune:
		w.bad = true
	}
}

func (w *wideCheck) text(complete bool) bool {
	return !w.bad && (!complete || w.n == 0 && w.high == 0)
}

// DecodeText is the text of a file sniff found to be text, as UTF-8: UTF-16 and UTF-32 text
// (a byte order mark says so) is converted, its mark dropped; anything else is returned as it is.
func DecodeText(b []byte) []byte {
	enc, n := bomOf(b)
	if enc == encUTF8 {
		return b
	}
	b = b[n:]
	out := make([]byte, 0, len(b))
	if enc <= encUTF16BE {
		units := make([]uint16, len(b)/2)
		for i := range units {
			if enc == encUTF16LE {
				units[i] = binary.LittleEndian.Uint16(b[2*i:])
			} else {
				units[i] = binary.BigEndian.Uint16(b[2*i:])
			}
		}
		for _, r := range utf16.Decode(units) {
			out = utf8.AppendRune(out, r)
		}
		return out
	}
	for i := 0; i+4 <= len(b); i += 4 {
		r := binary.LittleEndian.Uint32(b[i:])
		if enc == encUTF32BE {
			r = binary.BigEndian.Uint32(b[i:])
		}
		out = utf8.AppendRune(out, rune(r))
	}
	return out
}

// withCharset is the mime of text in the encoding tc found, its charset named when not UTF-8.
func withCharset(mime, kind string, tc *textCheck) string {
	if kind != manifest.KindText || tc.wide == nil {
		return mime
	}
	return baseMime(mime) + "; charset=" + charsets[tc.wide.enc]
}

// refine corrects the kind of a format whose mimetype answer says too little for an agent: a
// WebM or Matroska file with audio tracks and no video track (a browser's voice note) is audio.
// head is the file's first bytes. It returns mime and kind unchanged otherwise.
func refine(mime, kind string, head []byte) (string, string) {
	switch mime {
	case "video/webm", "video/x-matroska":
		if audioOnlyMatroska(head) {
			return strings.Replace(mime, "video/", "audio/", 1), manifest.KindAudio
		}
	}
	return mime, kind
}

// audioOnlyMatroska reports whether the Tracks element in head (EBML ID 1654AE6B) names at
// least one audio codec (CodecID "A_…") and no video codec ("V_…"). A head without the Tracks
// element says nothing: the file stays video.
func audioOnlyMatroska(head []byte) bool {
	i := bytes.Index(head, []byte{0x16, 0x54, 0xae, 0x6b})
	if i < 0 {
		return false
	}
	tracks := head[i+4:]
	audio, video := false, false
	for j := 0; j+3 < len(tracks); j++ {
		// CodecID (0x86) with a one-byte size: the codec name follows.
		if tracks[j] != 0x86 || tracks[j+1]&0x80 == 0 {
			continue
		}
		switch name := tracks[j+2:]; {
		case bytes.HasPrefix(name, []byte("A_")):
			audio = true
		case bytes.HasPrefix(name, []byte("V_")):
			video = true
		}
	}
	return audio && !video
}
