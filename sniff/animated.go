package sniff

import (
	"bytes"
	"encoding/binary"
)

// Animated reports whether the image whose first bytes are head is animated, from what its
// header says: an APNG (an acTL chunk before the first IDAT), a WebP with VP8X's animation flag or
// an ANIM chunk, a GIF with a looping (NETSCAPE2.0 or ANIMEXTS1.0) extension or a second frame
// within head. Models differ here: OpenAI refuses animated GIFs, others take the first frame.
func Animated(head []byte) bool {
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		for p := head[8:]; len(p) >= 8; {
			n := binary.BigEndian.Uint32(p)
			typ := string(p[4:8])
			if typ == "acTL" {
				return true
			}
			if typ == "IDAT" || uint64(n)+12 > uint64(len(p)) {
				return false
			}
			p = p[12+n:]
		}
	case len(head) >= 21 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP":
		if string(head[12:16]) == "VP8X" && head[20]&0x02 != 0 {
			return true
		}
		return bytes.Contains(head[12:], []byte("ANIM"))
	case bytes.HasPrefix(head, []byte("GIF87a")) || bytes.HasPrefix(head, []byte("GIF89a")):
		if bytes.Contains(head, []byte("NETSCAPE2.0")) || bytes.Contains(head, []byte("ANIMEXTS1.0")) {
			return true
		}
		return gifFrames(head) > 1
	}
	return false
}

// gifFrames counts the image descriptors of a GIF found within head (the last may be cut off).
func gifFrames(b []byte) int {
	if len(b) < 13 {
		return 0
	}
	p := 13
	if b[10]&0x80 != 0 { // global colour table
		p += 3 << (b[10]&7 + 1)
	}
	frames := 0
	skipBlocks := func() bool { // data sub-blocks up to the terminator
		for p < len(b) {
			n := int(b[p])
			p++
			if n == 0 {
				return true
			}
			p += n
		}
		return false
	}
	for p < len(b) {
		switch b[p] {
		case 0x21: // extension: label, then sub-blocks
			p += 2
			if !skipBlocks() {
				return frames
			}
		case 0x2c: // image descriptor
			frames++
			if p+10 > len(b) {
				return frames
			}
			flags := b[p+9]
			p += 10
			if flags&0x80 != 0 { // local colour table
				p += 3 << (flags&7 + 1)
			}
			p++ // LZW minimum code size
			if !skipBlocks() {
				return frames
			}
		default: // 0x3b trailer, or not a GIF past here
			return frames
		}
	}
	return frames
}
