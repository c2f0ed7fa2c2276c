package sniff

import (
	"strings"

	"github.com/attachctl/attachctl/manifest"
	"github.com/gabriel-vasile/mimetype"
)

const (
	mimeOctet = "application/octet-stream"
	mimeText  = "text/plain"
)

// classify decides the record's mime and kind from what mimetype made of the head (m) and whether
// the content is text (valid UTF-8 throughout, no NUL). The order matters:
//
//  1. A format mimetype recognised by its binary signature (not text/plain or one of its
//     children, not the octet-stream root) and that maps to a kind (image, audio, video, document,
//     archive) gets that kind: a PDF stays a document even when its bytes happen to be UTF-8.
//  2. A recognised format with no kind of its own (PostScript, an ELF executable…) keeps its mime;
//     its kind is text or binary by content.
//  3. text/plain and its children (JSON, CSV, SVG, HTML, XML, scripts…) and unrecognised content:
//     text-ness decides. Text keeps the mime mimetype found, without parameters (unrecognised
//     text becomes text/plain; RTF is a document); anything else is binary, application/octet-stream,
//     so that a file whose head is text but whose tail is not never claims a text mime.
func classify(m *mimetype.MIME, text bool) (mime, kind string) {
	mt := baseMime(m.String())
	if mt != mimeOctet && !isTextual(m) {
		if k := kindOf(mt); k != "" {
			return mt, k
		}
		if text {
			return mt, manifest.KindText
		}
		return mt, manifest.KindBinary
	}
	if !text {
		return mimeOctet, manifest.KindBinary
	}
	switch {
	case mt == mimeOctet:
		return mimeText, manifest.KindText
	case mt == "text/rtf" || mt == "application/rtf":
		return mt, manifest.KindDocument
	}
	return mt, manifest.KindText
}

// baseMime strips parameters: "text/plain; charset=utf-8" is "text/plain".
func baseMime(s string) string {
	if i := strings.IndexByte(s, ';'); i >= 0 {
		s = s[:i]
	}
	return strings.ToLower(strings.TrimSpace(s))
}

// isTextual reports whether m is text/plain or one of its descendants in mimetype's tree: formats
// recognised inside text, whose bytes must still pass the text check.
func isTextual(m *mimetype.MIME) bool {
	for ; m != nil; m = m.Parent() {
		if m.String() == mimeText || strings.HasPrefix(m.String(), mimeText+";") { // not m.Is: it parses both strings
			return true
		}
	}
	return false
}

// kindOf maps a recognised binary format to its kind, or "" when the format has none.
func kindOf(mt string) string {
	switch {
	case strings.HasPrefix(mt, "image/"):
		switch mt {
		case "image/svg+xml", "image/vnd.dxf", "image/vnd.dwg": // vector drawings (SVG, AutoCAD), not raster
			return ""
		}
		return manifest.KindImage
	case strings.HasPrefix(mt, "audio/"):
		return manifest.KindAudio
	case strings.HasPrefix(mt, "video/"):
		return manifest.KindVideo
	case documents[mt],
		strings.HasPrefix(mt, "application/vnd.openxmlformats-officedocument."),
		strings.HasPrefix(mt, "application/vnd.oasis.opendocument."),
		strings.HasPrefix(mt, "application/vnd.sun.xml."):
		return manifest.KindDocument
	case archives[mt]:
		return manifest.KindArchive
	}
	return ""
}

var documents = map[string]bool{
	"application/pdf":                           true,
	"application/msword":                        true,
	"application/vnd.ms-excel":                  true,
	"application/vnd.ms-powerpoint":             true,
	"application/vnd.ms-publisher":              true,
	"application/vnd.ms-visio.drawing.main+xml": true,
	"application/vnd.ms-outlook":                true,
	"application/vnd.wordperfect":               true,
	"application/epub+zip":                      true,
	"application/x-mobipocket-ebook":            true,
	"application/rtf":                           true,
	"text/rtf":                                  true,
}

var archives = map[string]bool{
	"application/zip":                         true,
	"application/gzip":                        true,
	"application/x-tar":                       true,
	"application/x-7z-compressed":             true,
	"application/vnd.rar":                     true,
	"application/x-rar-compressed":            true,
	"application/x-bzip2":                     true,
	"application/x-xz":                        true,
	"application/zstd":                        true,
	"application/lzip":                        true,
	"application/x-lzip":                      true,
	"application/java-archive":                true,
	"application/vnd.android.package-archive": true,
	"application/x-archive":                   true,
	"application/vnd.debian.binary-package":   true,
	"application/x-rpm":                       true,
	"application/x-cpio":                      true,
	"application/x-xar":                       true,
	"application/vnd.ms-cab-compressed":       true,
	"application/x-installshield":             true,
	"application/zlib":                        true,
}
