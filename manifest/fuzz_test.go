package manifest

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
)

// FuzzReader: no input makes the reader panic, and every record it accepts writes back as a line
// that reads again to the same record with its unknown fields intact.
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
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewReader(bytes.NewReader(in))
		for {
			rec, err := r.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				if CodeOf(err) != ManifestInvalid {
					t.Fatalf("error without manifest.invalid: %v", err)
				}
				return
			}
			var out bytes.Buffer
			w := NewWriter(&out)
			if err := w.Write(rec); err != nil {
				t.Fatalf("accepted record does not write: %v", err)
			}
			w.Flush()
			if bytes.Count(out.Bytes(), []byte("\n")) != 1 {
				t.Fatalf("record wrote %q, not one line", out.Bytes())
			}
			again, err := NewReader(&out).Next()
			if err != nil {
				t.Fatalf("written record %q does not read back: %v", out.Bytes(), err)
			}
			if again.Path != rec.Path || len(again.Extra) != len(rec.Extra) {
				t.Fatalf("round trip changed %+v into %+v", rec, again)
			}
			for i, f := range rec.Extra {
				g := again.Extra[i]
				if g.Key != f.Key || !sameJSON(f.Value, g.Value) {
					t.Fatalf("unknown field %q: %s became %q: %s", f.Key, f.Value, g.Key, g.Value)
				}
			}
		}
	})
}

// sameJSON compares two JSON values by meaning, numbers by their text.
func sameJSON(a, b []byte) bool {
	var x, y any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&x) != nil || db.Decode(&y) != nil {
		return bytes.Equal(a, b)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
