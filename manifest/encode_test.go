package manifest

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
)

// marshalStd is how records were written before AppendJSON, through encoding/json: the oracle
// AppendJSON must match byte for byte.
func marshalStd(r *Record) ([]byte, error) {
	path := r.Path
	k := recordJSON{
		Path: &path, Name: r.Name, Mime: r.Mime, Kind: r.Kind, Rel: r.Rel, Blake3: r.Blake3,
		Width: r.Width, Height: r.Height, Orientation: r.Orientation,
		Pages: r.Pages, TextLayer: r.TextLayer, DocNote: r.DocNote,
		Shrink: r.Shrink, Upload: r.Upload, Verified: r.Verified, Error: r.Error,
	}
	if r.HasSize || r.Size != 0 {
		size := r.Size
		k.Size = &size
	}
	if r.Kind == KindFolder || r.Files != 0 {
		files := r.Files
		k.Files = &files
	}
	b, err := json.Marshal(&k)
	if err != nil || len(r.Extra) == 0 {
		return b, err
	}
	b = b[:len(b)-1]
	for _, f := range r.Extra {
		if knownKeys[f.Key] {
			continue
		}
		b = append(b, ',')
		kb, _ := json.Marshal(f.Key)
		b = append(b, kb...)
		b = append(b, ':')
		b = append(b, f.Value...)
	}
	return append(b, '}'), nil
}

func checkSame(t *testing.T, r *Record) {
	t.Helper()
	want, err := marshalStd(r)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.AppendJSON(nil); !bytes.Equal(got, want) {
		t.Fatalf("AppendJSON of %+v:\n got %s\nwant %s", r, got, want)
	}
	// Appending keeps what was in the slice.
	if got := r.AppendJSON([]byte("x")); !bytes.Equal(got, append([]byte("x"), want...)) {
		t.Fatalf("AppendJSON after a prefix wrote %s", got)
	}
}

func TestAppendJSONSameAsEncodingJSON(t *testing.T) {
	odd := "a\"b\\c/d\b\f\n\r\t\x00\x01\x1f\x7f<script>&amp;\u2028\u2029é日本😀\xff\xfe\xc3(\xed\xa0\x80\xef\xbf\xbd"
	for _, r := range []*Record{
		{Path: ""},
		{Path: "a.png"},
		{Path: "a", HasSize: true},
		{Path: "a", Size: -3},
		{Path: "shots/a.png", Name: "a.png", Size: 819200, HasSize: true, Mime: "image/png", Kind: KindImage,
			Blake3: strings.Repeat("ab", 32), Width: 1920, Height: 1080, Orientation: 6},
		{Path: "Café.TXT", Name: "Café.TXT", Mime: "text/plain; charset=utf-16le", Kind: KindText},
		{Path: "dir", Kind: KindFolder},
		{Path: "dir", Kind: KindFolder, Files: 12, Size: 99},
		{Path: "x", Files: 3},
		{Path: "dir/sub/f.txt", Rel: "sub/f.txt", Width: -1, Height: -2},
		{Path: "r.pdf", Kind: KindDocument, Pages: 3, TextLayer: new(true)},
		{Path: "s.pdf", Pages: -1, TextLayer: new(false), DocNote: odd},
		{Path: odd, Name: odd, Mime: odd, Kind: odd, Rel: odd, Blake3: odd},
		{Path: "p", Shrink: &Shrink{Action: "kept"}},
		{Path: "p", Shrink: &Shrink{Action: "shrunk", Reason: odd, From: &From{Path: odd, Name: "n", Size: 0, Mime: "image/heic"}}},
		{Path: "p", Shrink: &Shrink{Action: "shrunk", From: &From{Path: "o", Name: "o", Size: 5, Mime: "m", Blake3: "b", Width: 7, Height: 8}}},
		{Path: "p", Upload: &Upload{ID: "01J", Store: "/s", Path: odd}},
		{Path: "p", Upload: &Upload{}},
		{Path: "p", Verified: &Verified{OK: true, Blake3: "ab", At: "2026-12-02T00:00:00Z"}},
		{Path: "p", Verified: &Verified{}},
		{Path: "p", Error: &fault.Error{Stage: "sniff", Code: fault.FileMissing, Message: odd}},
		{Path: "p", Error: &fault.Error{}},
		{Path: "p", Extra: []Field{{Key: "ticket", Value: json.RawMessage(`"T-1"`)}, {Key: odd, Value: json.RawMessage(`{"deep":[1,null]}`)}}},
		{Path: "p", Extra: []Field{{Key: "path", Value: json.RawMessage(`"shadow"`)}, {Key: "Path", Value: json.RawMessage(`1`)}}},
		{Path: "p", Kind: KindFolder, Files: 2, Shrink: &Shrink{Action: "a"}, Upload: &Upload{ID: "i"},
			Verified: &Verified{OK: false}, Error: &fault.Error{Stage: "upload", Code: fault.StoreFull, Message: "m"},
			Extra: []Field{{Key: "z", Value: json.RawMessage(`true`)}}},
	} {
		checkSame(t, r)
	}
}

// TestAppendJSONRandom: records of random fields, strings drawn from bytes that need escaping,
// invalid UTF-8, multibyte runes and both cases, write as encoding/json writes them.
func TestAppendJSONRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 1))
	for range 20000 {
		checkSame(t, randomRecord(rng))
	}
}

var oddPieces = []string{
	"a", "Z", "é", "É", "ß", "日", "😀", "\u2028", "\u2029", "\ufffd", "\xff", "\xc3", "\xe2\x82", "\xed\xa0\x80",
	"\xf4\x90\x80\x80", "\"", "\\", "/", "<", ">", "&", "\x00", "\x1f", "\x7f", "\b", "\f", "\n", "\r", "\t", " ", ".png",
}

func randomString(rng *rand.Rand) string {
	var b strings.Builder
	for range rng.IntN(12) {
		if rng.IntN(3) == 0 {
			b.WriteByte(byte(rng.IntN(256)))
		} else {
			b.WriteString(oddPieces[rng.IntN(len(oddPieces))])
		}
	}
	return b.String()
}

func randomRecord(rng *rand.Rand) *Record {
	s := func() string {
		if rng.IntN(3) == 0 {
			return ""
		}
		return randomString(rng)
	}
	n := func() int { return []int{0, 0, 1, -1, 4032, 1 << 40, -1 << 62}[rng.IntN(7)] }
	kinds := []string{"", KindFolder, KindImage, "Folder"}
	r := &Record{
		Path: randomString(rng), Name: s(), Size: int64(n()), HasSize: rng.IntN(2) == 0, Mime: s(),
		Kind: kinds[rng.IntN(len(kinds))], Files: n(), Rel: s(), Blake3: s(), Width: n(), Height: n(), Orientation: n(),
		Pages: n(), DocNote: s(),
	}
	if rng.IntN(3) == 0 {
		r.TextLayer = new(rng.IntN(2) == 0)
	}
	if rng.IntN(3) == 0 {
		r.Shrink = &Shrink{Action: s(), Reason: s()}
		if rng.IntN(2) == 0 {
			r.Shrink.From = &From{Path: s(), Name: s(), Size: int64(n()), Mime: s(), Blake3: s(), Width: n(), Height: n()}
		}
	}
	if rng.IntN(3) == 0 {
		r.Upload = &Upload{ID: s(), Store: s(), Path: s()}
	}
	if rng.IntN(3) == 0 {
		r.Verified = &Verified{OK: rng.IntN(2) == 0, Blake3: s(), At: s()}
	}
	if rng.IntN(3) == 0 {
		r.Error = &fault.Error{Stage: s(), Code: fault.Code(s()), Message: s()}
	}
	for range rng.IntN(3) {
		key := s()
		if rng.IntN(4) == 0 {
			key = []string{"path", "size", "error", "Path"}[rng.IntN(4)]
		}
		r.Extra = append(r.Extra, Field{Key: key, Value: json.RawMessage(`"v"`)})
	}
	return r
}

// FuzzAppendJSON: any strings in any field write as encoding/json writes them.
func FuzzAppendJSON(f *testing.F) {
	f.Add("a.png", "a.png", "image/png", "sub/a.png", "ticket", int64(5), 3, true)
	f.Add("caf\xe9<&>\u2028", "\x00\x1f\"\\", "", "", "\xff", int64(0), 0, false)
	f.Fuzz(func(t *testing.T, path, name, mime, rel, key string, size int64, n int, flag bool) {
		r := &Record{Path: path, Name: name, Mime: mime, Kind: rel, Rel: rel, Size: size, HasSize: flag,
			Files: n, Width: n, Blake3: key, Extra: []Field{{Key: key, Value: json.RawMessage(`1`)}}}
		if flag {
			r.Shrink = &Shrink{Action: name, Reason: mime, From: &From{Path: key, Size: size, Height: n}}
			r.Error = &fault.Error{Stage: rel, Code: fault.Code(key), Message: path}
		} else {
			r.Upload = &Upload{ID: key, Store: mime, Path: path}
			r.Verified = &Verified{OK: n%2 == 0, Blake3: name, At: rel}
		}
		checkSame(t, r)
	})
}

// TestWriterNoAlloc: writing a sniffed record costs no allocation once the writer is warm.
func TestWriterNoAlloc(t *testing.T) {
	w := NewWriter(io.Discard)
	r := &Record{Path: "shots/Café-01.png", Name: "Café-01.png", Size: 819200, HasSize: true, Mime: "image/png",
		Kind: KindImage, Width: 1920, Height: 1080, Rel: "Café-01.png"}
	if n := testing.AllocsPerRun(1000, func() {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("Writer.Write: %v allocations a record, want 0", n)
	}
}
