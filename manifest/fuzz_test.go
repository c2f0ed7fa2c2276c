package manifest

import (
	"bytes"
	"io"
	"testing"
	"unicode/utf8"

	"github.com/attachctl/attachctl/manifest/fault"
)

// FuzzReader: no input makes the reader panic; every line it accepts is valid UTF-8, and every
// record it accepts writes as one valid UTF-8 line that reads again to the same record and writes
// back byte for byte, its unknown fields exactly as they came.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		`{"path":"a.png","name":"a.png","size":10,"mime":"image/png","kind":"image","blake3":"00"}`,
		`{"path":"a","mine":{"deep":[1,"two",null,true]},"size":0}` + "\n" + `{"path":"b"}`,
		`{"path":"x","shrink":{"action":"kept","from":{"path":"y","name":"y","size":1,"mime":"m"}}}`,
		`{"path":"x","verified":{"ok":true,"blake3":"ab","at":"2026-01-01T00:00:00Z"},"u":"\ud83d\ude00"}`,
		"{\"path\":\"\xff\xfe\",\"\xff\":\"\xfe\"}",
		`{"path":"a","path":"b","x":1,"x":2}`,
		"\n\n{\"path\":\"a\"}\r\n",
		`{"path":"a"`,
		`{"path":1e400}`,
		// Not UTF-8: Latin-1 in a path, in a user's field, a truncated sequence, an overlong
		// encoding, a surrogate encoded in UTF-8, and a bad line after a good one.
		"{\"path\":\"caf\xe9.txt\"}",
		"{\"path\":\"a\",\"note\":\"na\xefve\"}",
		"{\"path\":\"\xe2\x82\"}",
		"{\"path\":\"\xc0\xaf\"}",
		"{\"path\":\"\xed\xa0\x80\"}",
		"{\"path\":\"ok\"}\n{\"path\":\"\xe9\"}\n",
		"{\"path\":\"\xef\xbf\xbd is U+FFFD itself\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewReader(bytes.NewReader(in))
		lines := bytes.SplitAfter(in, []byte("\n"))
		for {
			rec, err := r.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				if fault.CodeOf(err) != fault.ManifestInvalid {
					t.Fatalf("error without manifest.invalid: %v", err)
				}
				return
			}
			if line := lines[r.Line()-1]; !utf8.Valid(line) {
				t.Fatalf("accepted line %d, %q, is not valid UTF-8", r.Line(), line)
			}
			out := writeOne(t, rec)
			if !utf8.Valid(out) || bytes.Count(out, []byte("\n")) != 1 {
				t.Fatalf("record wrote %q, not one valid UTF-8 line", out)
			}
			again, err := NewReader(bytes.NewReader(out)).Next()
			if err != nil {
				t.Fatalf("written record %q does not read back: %v", out, err)
			}
			if again.Path != rec.Path || len(again.Extra) != len(rec.Extra) {
				t.Fatalf("round trip changed %+v into %+v", rec, again)
			}
			for i, f := range rec.Extra {
				g := again.Extra[i]
				if g.Key != f.Key || !bytes.Equal(f.Value, g.Value) {
					t.Fatalf("unknown field %q: %s became %q: %s", f.Key, f.Value, g.Key, g.Value)
				}
			}
			if twice := writeOne(t, again); !bytes.Equal(twice, out) {
				t.Fatalf("written again, %q became %q", out, twice)
			}
		}
	})
}

// writeOne writes rec alone with a Writer.
func writeOne(t *testing.T, rec *Record) []byte {
	t.Helper()
	var out bytes.Buffer
	w := NewWriter(&out)
	if err := w.Write(rec); err != nil {
		t.Fatalf("accepted record does not write: %v", err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
