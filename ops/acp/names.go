package acp

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// What the model reads of each file's name (docs/resolve.md). ACP's image and audio blocks carry
// no name, so each inline one is preceded by a short text block that names it: its name (its path
// in the folder for a file of a folder, or for a record of a folder walked with --each, its rel),
// and its path on disk (the store's file or the work folder's copy), so that the model can tell
// shot07.png from shot19.png, cite one, and open the original. The links of --each files are
// named by their rel too: a/doc.go and b/doc.go, not two doc.go.

// relKey is the optional field of _meta.acpmux.upload that carries an --each record's rel.
const relKey = "rel"

// modelName is the name the model reads for r: its path in its folder where it has one.
func (r *ref) modelName() string {
	if r.parent != nil {
		return r.label()
	}
	if r.each != "" {
		return r.each
	}
	return r.name
}

// linkName is the "name" of r's link.
func (r *ref) linkName() string {
	if r.each != "" {
		return r.each
	}
	return r.name
}

// nameText is the text of the block that goes before r's inline image or audio block.
func nameText(r *ref) string {
	what := "Image"
	if !r.image {
		what = "Audio"
	}
	if r.of != nil {
		w, h := r.dataDims()
		return fmt.Sprintf("Page %d of %s (%s, %d bytes, %d×%d, rendered from the document), the document on disk at %s:",
			r.page, escapePath(r.of.modelName()), r.dataMime(), r.dataSize(), w, h, escapePath(r.link))
	}
	if f := r.fit(); f != nil {
		return fmt.Sprintf("%s %s (%s, %d bytes, %d×%d, shrunk to fit the model from the original's %s, %d bytes, %d×%d), on disk at %s:",
			what, escapePath(r.modelName()), f.ToMime, f.ToSize, f.ToWidth, f.ToHeight, f.FromMime, f.FromSize, f.FromWidth, f.FromHeight, escapePath(r.link))
	}
	return fmt.Sprintf("%s %s (%s, %d bytes), on disk at %s:", what, escapePath(r.modelName()), r.mime, r.size, escapePath(r.link))
}

// shrunkNote is what a context line adds for an image sent as a copy shrunk to fit, "" for one
// sent as it is: both the copy and the original are named.
func shrunkNote(r *ref) string {
	f := r.fit()
	if f == nil {
		return ""
	}
	return fmt.Sprintf(" as a copy shrunk to %d×%d (%s, %d bytes)", f.ToWidth, f.ToHeight, f.ToMime, f.ToSize)
}

// nameBlock is the text block naming r, before its inline block.
func nameBlock(r *ref) object {
	return object{{"type", jsonString("text")}, {"text", jsonString(nameText(r))}}
}

// nameCost is what r's name block adds to the output: the block and its comma.
func nameCost(r *ref) int64 { return int64(len(nameBlock(r).marshal())) + 1 }

// relError says why rel is not a plain relative path of a file in a folder (slash-separated
// plain names), or "".
func relError(rel string) string {
	switch {
	case rel == "":
		return "is empty"
	case len(rel) > 4096:
		return "is longer than 4096 bytes"
	case !utf8.ValidString(rel):
		return "is not valid UTF-8"
	case strings.ContainsRune(rel, 0):
		return "contains NUL"
	}
	for _, seg := range strings.Split(rel, "/") {
		if seg == "" || seg == "." || seg == ".." || len(seg) > 255 {
			return "is not a relative path of plain names"
		}
	}
	return ""
}
