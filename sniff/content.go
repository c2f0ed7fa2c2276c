package sniff

import (
	"github.com/gabriel-vasile/mimetype"

	"github.com/attachctl/attachctl/manifest"
)

// Content is what Fill decides of a file's media type and kind, for bytes already read: b is the
// whole content when complete is set, else its head (the text check then gives a rune cut off at
// the end the benefit of the doubt, as Fill does with NoHash). It reads nothing and hashes nothing:
// for a caller that has opened the file its own way (resolve, through the store's guarded open).
func Content(b []byte, complete bool) (mime, kind string) {
	if len(b) == 0 {
		return mimeText, manifest.KindText
	}
	m := mimetype.Detect(b)
	var tc textCheck
	if k := kindOf(baseMime(m.String())); k == "" || isTextual(m) {
		tc.write(b)
	}
	mime, kind = classify(m, tc.text(complete))
	mime, kind = refine(mime, kind, b)
	return withCharset(mime, kind, &tc), kind
}
