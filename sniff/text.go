package sniff

import (
	"bytes"
	"unicode/utf8"

	"github.com/gabriel-vasile/mimetype"

	"github.com/attachctl/attachctl/manifest"
)

// textCheck judges incrementally whether a stream of bytes is text as docs/commands.md ("sniff")
// defines it: valid UTF-8 from the first byte to the last, with no NUL. Bytes arrive in chunks of
// any size; a multi-byte rune split across two chunks is carried over and checked whole.
type textCheck struct {
	bad     bool    // an invalid sequence or a NUL was seen
	carry   [4]byte // the start of a rune the last chunk ended in the middle of
	n       int     // bytes in carry
	started bool
	pre     []byte     // the first bytes, until there are 4 to tell a byte order mark by
	wide    *wideCheck // UTF-16 or UTF-32 text, which its byte order mark announced
}

// write feeds the next chunk.
func (t *textCheck) write(p []byte) {
	if !t.started {
		if len(t.pre)+len(p) < 4 {
			t.pre = append(t.pre, p...)
			return
		}
		if len(t.pre) > 0 {
			p = append(t.pre, p...)
			t.pre = nil
		}
		t.start(p)
		p = t.skipBOM(p)
	}
	t.feed(p)
}

// start decides the encoding from the first bytes (at least 4 unless the stream is shorter).
func (t *textCheck) start(p []byte) {
	t.started = true
	if enc, _ := bomOf(p); enc != encUTF8 {
		t.wide = &wideCheck{enc: enc}
	}
}

func (t *textCheck) skipBOM(p []byte) []byte {
	if t.wide != nil {
		_, n := bomOf(p)
		return p[n:]
	}
	return p
}

// feed checks bytes past the start.
func (t *textCheck) feed(p []byte) {
	if t.wide != nil {
		t.wide.write(p)
		return
	}
	if t.bad || len(p) == 0 {
		return
	}
	if bytes.IndexByte(p, 0) >= 0 {
		t.bad = true
		return
	}
	if t.n > 0 { // complete the rune the previous chunk ended in
		for t.n < len(t.carry) && len(p) > 0 && !utf8.FullRune(t.carry[:t.n]) {
			t.carry[t.n] = p[0]
			t.n++
			p = p[1:]
		}
		if !utf8.FullRune(t.carry[:t.n]) {
			return // still incomplete and p is used up
		}
		if r, size := utf8.DecodeRune(t.carry[:t.n]); r == utf8.RuneError && size <= 1 || size != t.n {
			t.bad = true
			return
		}
		t.n = 0
	}
	// Hold back a rune cut off at the end of p.
	cut := len(p)
	for i := len(p) - 1; i >= 0 && i >= len(p)-(utf8.UTFMax-1); i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				cut = i
			}
			break
		}
	}
	if !utf8.Valid(p[:cut]) {
		t.bad = true
		return
	}
	t.n = copy(t.carry[:], p[cut:])
}

// text reports whether everything written so far is text. complete says the stream has ended: then
// a rune left unfinished at the end makes it not text; otherwise (only a head was read) it is
// given the benefit of the doubt, since the rest of the rune lies in the bytes not read.
func (t *textCheck) text(complete bool) bool {
	if !t.started && len(t.pre) > 0 { // fewer than 4 bytes in all
		pre := t.pre
		t.pre = nil
		t.start(pre)
		t.feed(t.skipBOM(pre))
	}
	if t.wide != nil {
		return t.wide.text(complete)
	}
	if t.bad {
		return false
	}
	return !complete || t.n == 0
}

// Text judges a whole file's text-ness as it streams past another reader of the file, to finish a
// sniff that read only the head (Options.NoHash): `attachctl upload FILE` sniffs FILE's head and
// lets the upload's own pass, which hashes FILE anyway, show it every byte. Observe(nil) forgets
// what was seen (the pass restarted).
type Text struct{ tc textCheck }

// Observe feeds the next bytes of the file, in order from the first; nil starts over.
func (t *Text) Observe(p []byte) {
	if p == nil {
		t.tc = textCheck{}
		return
	}
	t.tc.write(p)
}

// Settle corrects rec's Mime and Kind once every byte of the file has been observed: a kind that
// the head's text-ness decided (text, or an RTF document) becomes what Fill says of content that is
// not text as a whole. Kinds that the format alone decides are left as they are.
func (t *Text) Settle(rec *manifest.Record) {
	if t.tc.text(true) || rec.Kind != manifest.KindText && rec.Kind != manifest.KindDocument {
		return
	}
	m := mimetype.Lookup(rec.Mime)
	if m == nil {
		m = mimetype.Lookup(mimeOctet)
	}
	if mime, kind := classify(m, false); kind == manifest.KindBinary {
		rec.Mime, rec.Kind = mime, kind
	}
}
