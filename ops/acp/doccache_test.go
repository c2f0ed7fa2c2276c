package acp

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zeebo/blake3"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/scripts/docgen"
	"github.com/attachctl/attachctl/shrink/doc"
)

// A text entry gives back what was written, for the document it was written for alone; any
// change of its bytes, a cut, or another document makes it a miss.
func TestTextEntry(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	info := doc.Info{Format: "pdf", Pages: 7, TextLayer: true}
	pages := []doc.Page{{N: 1, Text: "first page\nwith two lines"}, {N: 2, Text: ""}, {N: 5, Text: "über \u2028 \x00 the fifth"}}
	shots := []pageShot{{1, 1568, 4242, strings.Repeat("0f", 32)}, {2, 2048, 99, strings.Repeat("f0", 32)}}
	b := encodeText(sum, 12345, &textEntry{info, pages, shots})
	e, err := decodeText(b, sum, 12345, "pdf")
	if err != nil || e.info != info || len(e.pages) != len(pages) || !slices.Equal(e.shots, shots) {
		t.Fatalf("%+v %v", e, err)
	}
	for i := range pages {
		if e.pages[i] != pages[i] {
			t.Errorf("page %d: %+v, want %+v", i, e.pages[i], pages[i])
		}
	}
	if s, ok := e.shot(2, 2048); !ok || s != shots[1] {
		t.Errorf("page 2 at 2048: %+v %v", s, ok)
	}
	if _, ok := e.shot(2, 1568); ok {
		t.Error("page 2 at 1568 was never rendered")
	}
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= 0x20
		if _, err := decodeText(c, sum, 12345, "pdf"); err == nil {
			t.Fatalf("byte %d changed: the entry still decodes", i)
		}
	}
	for n := range len(b) {
		if _, err := decodeText(b[:n], sum, 12345, "pdf"); err == nil {
			t.Fatalf("cut to %d bytes: the entry still decodes", n)
		}
	}
	for _, c := range []struct {
		sum    string
		size   int64
		format string
	}{{strings.Repeat("cd", 32), 12345, "pdf"}, {sum, 12346, "pdf"}, {sum, 12345, "docx"}} {
		if _, err := decodeText(b, c.sum, c.size, c.format); err == nil {
			t.Errorf("the entry of another document (%+v) decodes", c)
		}
	}
	// An entry whose page table runs past its text, checksum made right.
	bad := encodeText(sum, 1, &textEntry{info: doc.Info{Format: "pdf", Pages: 1}, pages: []doc.Page{{N: 1, Text: "abc"}}})
	body := bytes.Replace(bad[:len(bad)-32], []byte{1, 3, 'a'}, []byte{1, 9, 'a'}, 1)
	if _, err := decodeText(withSum(body), sum, 1, "pdf"); err == nil {
		t.Error("a page longer than the entry decodes")
	}
}

func withSum(body []byte) []byte {
	h := blake3.Sum256(body)
	return append(body, h[:]...)
}

// A second resolve trusts only entries that are whole and the user's own: a text entry or a page
// open to others, a symbolic link in place of one, or a page whose bytes changed is a miss, and
// the document is read (or the page rendered) again, the output the same.
func TestDocCacheTrusted(t *testing.T) {
	f := useFakeEngine(t)
	s := testStore(t)
	pdf := rsPut(t, s, "report.pdf", "application/pdf", f.add(docgen.TextPDF(docSentences), "pdf", docSentences...))
	scan := rsPut(t, s, "scan.pdf", "application/pdf", f.add(docgen.ScanPDF(1), "pdf", ""))
	opts := claudeOpts(t)
	dir := opts.Shrink.Dir
	prompt := rsPrompt(t, []*manifest.Record{pdf, scan}, "")
	resolve := func() []byte {
		t.Helper()
		res, err := Resolve(prompt, rsLocal(s), opts)
		if err != nil {
			t.Fatal(err)
		}
		return rsOutput(t, res)
	}
	first := resolve()
	text := textEntryPath(dir, pdf.Blake3)
	page := filepath.Join(dir, scan.Blake3+".page1.e1568."+docCacheVersion+".png")
	for _, p := range []string{text, page} {
		if fi, err := os.Lstat(p); err != nil || runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", p, fi, err)
		}
	}
	texts, renders := f.texts.Load(), f.renders.Load()
	check := func(what string, wantTexts, wantRenders int32) {
		t.Helper()
		if out := resolve(); !bytes.Equal(out, first) {
			t.Errorf("%s: the output differs", what)
		}
		texts, renders = texts+wantTexts, renders+wantRenders
		if f.texts.Load() != texts || f.renders.Load() != renders {
			t.Errorf("%s: %d texts, %d renders; want %d, %d", what, f.texts.Load(), f.renders.Load(), texts, renders)
		}
	}
	check("whole", 0, 0)

	if runtime.GOOS != "windows" { // no owner bits in a mode there
		if err := os.Chmod(text, 0o644); err != nil {
			t.Fatal(err)
		}
		check("text entry readable by others", 1, 0)
		if err := os.Chmod(page, 0o640); err != nil {
			t.Fatal(err)
		}
		check("page readable by the group", 0, 1)
	}

	b, err := os.ReadFile(text)
	if err != nil {
		t.Fatal(err)
	}
	b[len(textMagic)+70] ^= 1
	if err := os.WriteFile(text, b, 0o600); err != nil {
		t.Fatal(err)
	}
	check("text entry changed", 1, 0)

	b, err = os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1 // still a PNG's head and end
	if err := os.WriteFile(page, b, 0o600); err != nil {
		t.Fatal(err)
	}
	check("page changed", 0, 1)

	if runtime.GOOS != "windows" { // symbolic links need privileges there
		good, err := os.ReadFile(text)
		if err != nil {
			t.Fatal(err)
		}
		elsewhere := filepath.Join(t.TempDir(), "entry")
		if err := os.WriteFile(elsewhere, good, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(text); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(elsewhere, text); err != nil {
			t.Fatal(err)
		}
		check("text entry a symbolic link", 1, 0)
		if fi, err := os.Lstat(text); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("the link was not replaced by an entry: %v %v", fi, err)
		}
	}
}

// A page found in the cache is hashed as it is read and not again before the output is written;
// a page changed after that is caught when it is written.
func TestDocCachePageChanged(t *testing.T) {
	f := useFakeEngine(t)
	s := testStore(t)
	scan := rsPut(t, s, "scan.pdf", "application/pdf", f.add(docgen.ScanPDF(1), "pdf", ""))
	opts := claudeOpts(t)
	prompt := rsPrompt(t, []*manifest.Record{scan}, "")
	if _, err := Resolve(prompt, rsLocal(s), opts); err != nil {
		t.Fatal(err)
	}
	res, err := Resolve(prompt, rsLocal(s), opts)
	if err != nil {
		t.Fatal(err)
	}
	var p *ref
	for _, r := range res.refs {
		if r != nil && r.of != nil {
			p = r
		}
	}
	if p == nil || p.checked == nil || p.mode != inlineImage {
		t.Fatalf("no page found in the cache and checked: %+v", p)
	}
	b, err := os.ReadFile(p.path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := os.Remove(p.path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := res.Bytes(); err == nil || fault.CodeOf(err) == "" {
		t.Fatalf("a page changed after the check was written: %v", err)
	}
}

// appendJSONString escapes as encoding/json does without HTML escaping, and jsonEscapedLen
// counts what it writes.
func TestAppendJSONString(t *testing.T) {
	cases := []string{"", "plain", "\"quoted\" \\ back", "\b\f\n\r\t\x00\x01\x1f\x7f", "<&>", "\u2028\u2029 über 日本",
		"bad \xff \xe2\x80 end", "\xe2\x80", "\xf0\x9f\x98\x80", "\xed\xa0\x80 surrogate", "\xc0\xaf overlong"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			switch rng.IntN(4) {
			case 0:
				b[i] = byte(rng.IntN(0x20))
			case 1:
				b[i] = byte(0x80 + rng.IntN(0x80))
			default:
				b[i] = byte(rng.IntN(0x80))
			}
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		want, err := marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got := appendJSONString([]byte("x"), s)
		if string(got) != "x"+string(want) {
			t.Fatalf("%q: %s, want %s", s, got[1:], want)
		}
		if n := jsonEscapedLen(s); n != len(want)-2 {
			t.Fatalf("%q: counted %d, wrote %d", s, n, len(want)-2)
		}
		// Pieces escaped one after another, each ending before an ASCII byte, make the whole.
		var pieces []byte
		start := 0
		for i := 1; i < len(s); i++ {
			if s[i] < utf8.RuneSelf && rng.IntN(3) == 0 {
				pieces = appendJSONEscaped(pieces, s[start:i])
				start = i
			}
		}
		pieces = appendJSONEscaped(pieces, s[start:])
		if "\""+string(pieces)+"\"" != string(want) {
			t.Fatalf("%q in pieces: %s, want %s", s, pieces, want)
		}
	}
}
