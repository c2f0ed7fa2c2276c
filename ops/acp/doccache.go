package acp

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/zeebo/blake3"

	"github.com/attachctl/attachctl/shrink/doc"
)

// The documents' cache (docs/resolve.md, "Documents"): a document's text and its rendered pages,
// kept beside shrink's cache under the document's BLAKE3 (the one the store recorded when the
// upload was finished, so the document itself is never read again to find its entry). A second
// resolve of the same prompt reads these and does not start the PDF engine.
//
// An entry is trusted only when it is whole and the user's own: it appears by rename
// (shrink.WriteCache), it is a regular file of one link, owned by the user and not open to
// others, and it checks out. The text entry ends with the BLAKE3 of all before it and names the
// document it was made from; it also records each page rendered (its size and BLAKE3), written
// again once pages are rendered, and a page file is used only when its bytes, hashed as they are
// read, are the ones recorded (that hash is then what its inline block is checked against when it
// is written). Anything else is a miss: the document is read again, or the page rendered again,
// and the entry written anew; never an error.

// docCacheVersion names the derived files' layout in their names: change it when the text or the
// pages for the same document would change, so that old ones are not reused.
const docCacheVersion = "d2"

// textMagic starts a text entry; the version in it is the layout's.
const textMagic = "attachctl document text " + docCacheVersion + "\n"

// textEntryPath is where the text of the document whose BLAKE3 is sum is cached.
func textEntryPath(dir, sum string) string {
	return filepath.Join(dir, sum+".text."+docCacheVersion)
}

// pagePath is where page n of document r rendered at edge pixels is cached.
func pagePath(r *ref, dir string, n, edge int) string {
	return filepath.Join(dir, fmt.Sprintf("%s.page%d.e%d.%s.png", r.blake3, n, edge, docCacheVersion))
}

// textEntry is what the cache keeps of a document: its facts, its text and the pages rendered.
type textEntry struct {
	info  doc.Info
	pages []doc.Page
	shots []pageShot
}

// pageShot is a page rendered into the cache: page n at edge pixels, a PNG of size bytes whose
// BLAKE3 is sum (hex).
type pageShot struct {
	n, edge int
	size    int64
	sum     string
}

// shot is the record of page n at edge, if there is one.
func (e *textEntry) shot(n, edge int) (pageShot, bool) {
	for _, s := range e.shots {
		if s.n == n && s.edge == edge {
			return s, true
		}
	}
	return pageShot{}, false
}

// setShot records p, in place of any record of the same page and edge.
func (e *textEntry) setShot(p pageShot) {
	for i, s := range e.shots {
		if s.n == p.n && s.edge == p.edge {
			e.shots[i] = p
			return
		}
	}
	e.shots = append(e.shots, p)
}

// encodeText is the text entry of a document (its BLAKE3 sum and size): the magic line, the
// document's sum and size, its facts, the pages rendered, each page's number and length, the
// pages' text, and the BLAKE3 of all that. A binary layout, so that reading an entry is one read
// and one hash, with no parsing of the text itself.
func encodeText(sum string, size int64, e *textEntry) []byte {
	n := len(textMagic) + len(sum) + len(e.info.Format) + 16*(len(e.pages)+4) + 96*len(e.shots) + 32
	for _, p := range e.pages {
		n += len(p.Text)
	}
	b := make([]byte, 0, n)
	b = append(b, textMagic...)
	b = appendBytes(b, sum)
	b = binary.AppendUvarint(b, uint64(size))
	b = appendBytes(b, e.info.Format)
	b = binary.AppendUvarint(b, uint64(e.info.Pages))
	layer := byte(0)
	if e.info.TextLayer {
		layer = 1
	}
	b = append(b, layer)
	b = binary.AppendUvarint(b, uint64(len(e.shots)))
	for _, s := range e.shots {
		b = binary.AppendUvarint(b, uint64(s.n))
		b = binary.AppendUvarint(b, uint64(s.edge))
		b = binary.AppendUvarint(b, uint64(s.size))
		b = appendBytes(b, s.sum)
	}
	b = binary.AppendUvarint(b, uint64(len(e.pages)))
	for _, p := range e.pages {
		b = binary.AppendUvarint(b, uint64(p.N))
		b = binary.AppendUvarint(b, uint64(len(p.Text)))
	}
	for _, p := range e.pages {
		b = append(b, p.Text...)
	}
	h := blake3.Sum256(b)
	return append(b, h[:]...)
}

func appendBytes(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// errEntry is a text entry that does not check out.
var errEntry = errors.New("not a whole text entry")

// decodeText reads a text entry made by encodeText for the document sum of size bytes and format.
func decodeText(b []byte, sum string, size int64, format string) (*textEntry, error) {
	if len(b) < len(textMagic)+32 || string(b[:len(textMagic)]) != textMagic {
		return nil, errEntry
	}
	body, trailer := b[:len(b)-32], b[len(b)-32:]
	if h := blake3.Sum256(body); !bytes.Equal(h[:], trailer) {
		return nil, errEntry
	}
	d := entryReader{b: body[len(textMagic):]}
	if d.str() != sum || d.uint() != uint64(size) {
		return nil, errEntry
	}
	e := &textEntry{}
	e.info.Format = d.str()
	e.info.Pages = int(min(d.uint(), 1<<31))
	e.info.TextLayer = d.byte() == 1
	shots := d.uint()
	if d.err || e.info.Format != format || shots > uint64(len(d.b)) {
		return nil, errEntry
	}
	for range shots {
		s := pageShot{n: int(min(d.uint(), 1<<31)), edge: int(min(d.uint(), 1<<31)), size: int64(min(d.uint(), 1<<62)), sum: d.str()}
		if d.err {
			return nil, errEntry
		}
		e.shots = append(e.shots, s)
	}
	count := d.uint()
	if d.err || count > uint64(len(d.b)) {
		return nil, errEntry
	}
	e.pages = make([]doc.Page, count)
	lens := make([]uint64, count)
	total, last := uint64(0), uint64(0)
	for i := range e.pages {
		n, l := d.uint(), d.uint()
		if n <= last || n > 1<<31 || l > uint64(len(d.b)) {
			return nil, errEntry
		}
		e.pages[i].N, lens[i], last = int(n), l, n
		total += l
	}
	if d.err || total != uint64(len(d.b)) {
		return nil, errEntry
	}
	text := string(d.b) // one copy for every page, which then share it
	off := uint64(0)
	for i := range e.pages {
		e.pages[i].Text = text[off : off+lens[i]]
		off += lens[i]
	}
	return e, nil
}

// entryReader reads the fields of a text entry, remembering whether one ran past its end.
type entryReader struct {
	b   []byte
	err bool
}

func (d *entryReader) uint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *entryReader) byte() byte {
	if len(d.b) == 0 {
		d.err = true
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *entryReader) str() string {
	n := d.uint()
	if n > uint64(len(d.b)) {
		d.err, d.b = true, nil
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// readText is the cached entry of document r, when it is there, the user's own, within max
// bytes and whole.
func readText(path string, r *ref, format string, max int64) (*textEntry, bool) {
	f, fi, ok := openEntry(path, max)
	if !ok {
		return nil, false
	}
	defer f.Close()
	bp := readBuffer(fi.Size())
	defer reads.Put(bp)
	b := (*bp)[:fi.Size()]
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, false
	}
	e, err := decodeText(b, r.blake3, r.size, format)
	return e, err == nil
}

// openEntry opens a cache entry when it is one the user can trust: a regular file of one link,
// the user's own and closed to others, opened without following a symbolic link, at most max
// bytes.
func openEntry(path string, max int64) (*os.File, os.FileInfo, bool) {
	f, err := openNoFollow(path)
	if err != nil {
		return nil, nil, false
	}
	fi, err := f.Stat()
	if err != nil || entryUntrusted(fi) || fi.Size() > max {
		f.Close()
		return nil, nil, false
	}
	return f, fi, true
}

// entryUntrusted reports whether fi is not a cache file as shrink.WriteCache makes them: a
// regular file of one link, the user's own, neither group nor others may read or write it.
// Windows gives no owner bits in a mode (every writable file shows 0666): there the cache folder
// in the user's profile is what keeps others out.
func entryUntrusted(fi os.FileInfo) bool {
	if !fi.Mode().IsRegular() {
		return true
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return true
	}
	if uid, links, ok := owner(fi); ok && (uid != os.Getuid() || links != 1) {
		return true
	}
	return false
}

// pngSignature starts every PNG.
var pngSignature = []byte("\x89PNG\r\n\x1a\n")

// maxPageFile bounds the size of a cached page read: a PNG of a page at any edge a model takes is
// far smaller.
const maxPageFile = 64 << 20

// reads are the buffers cache entries are read into, reused across documents: decodeText
// copies out what it keeps, and a page is hashed a buffer at a time.
var reads sync.Pool

// pageBuffer is the most of a page read at once: a page rendered at a model's edge is a PNG of
// about a hundred KiB (a scan) to a few MiB (a photograph).
const pageBuffer = 256 << 10

// readBuffer is a buffer from reads of at least n bytes (put it back with reads.Put).
func readBuffer(n int64) *[]byte {
	if bp, ok := reads.Get().(*[]byte); ok && int64(cap(*bp)) >= n {
		return bp
	}
	b := make([]byte, max(n, pageBuffer))
	return &b
}

// cachedPage is page n of document r at edge from the cache, nil when the entry records none
// or the file is not the one it records. Its bytes are hashed as they are read, once: the inline
// block is checked against this hash when it is written, and the check before writing
// (verifyInline) does not read the file again while it is still the one hashed here
// (ref.checked).
func cachedPage(r *ref, dir string, n, edge int, e *textEntry) *ref {
	if dir == "" || e == nil {
		return nil
	}
	s, ok := e.shot(n, edge)
	if !ok || s.size <= 0 || s.size > maxPageFile {
		return nil
	}
	path := pagePath(r, dir, n, edge)
	f, fi, ok := openEntry(path, maxPageFile)
	if !ok || fi.Size() != s.size {
		if f != nil {
			f.Close()
		}
		return nil
	}
	defer f.Close()
	bp := readBuffer(min(s.size, pageBuffer))
	defer reads.Put(bp)
	buf := (*bp)[:min(cap(*bp), pageBuffer)]
	h := blake3.New()
	var head []byte
	for left := s.size; left > 0; {
		c := buf[:min(left, int64(len(buf)))]
		if _, err := io.ReadFull(f, c); err != nil {
			return nil
		}
		if head == nil {
			head = append([]byte(nil), c[:min(len(c), headSize)]...)
		}
		h.Write(c)
		left -= int64(len(c))
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != s.sum || !bytes.HasPrefix(head, pngSignature) {
		return nil
	}
	p := pageRef(r, n, path, s.size, head, s.sum)
	if p.undecodable != "" {
		return nil
	}
	p.checked = fi
	return p
}
