package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
)

func TestRecordRoundTrip(t *testing.T) {
	tests := []struct {
		name, in, out string
	}{
		{"known fields in the order of docs/manifest.md",
			`{"kind":"text","path":"a.txt","size":3,"mime":"text/plain","name":"a.txt"}`,
			`{"path":"a.txt","name":"a.txt","size":3,"mime":"text/plain","kind":"text"}`},
		{"unknown fields kept in order after known ones",
			`{"zeta":1,"path":"a","alpha":{"x":[1,2,{"y":null}]},"mid":"s\u00e9"}`,
			`{"path":"a","zeta":1,"alpha":{"x":[1,2,{"y":null}]},"mid":"s\u00e9"}`},
		{"a known zero size is kept",
			`{"path":"empty","size":0}`,
			`{"path":"empty","size":0}`},
		{"big numbers in unknown fields are kept exactly",
			`{"path":"a","n":123456789012345678901234567890,"f":1.0e+300}`,
			`{"path":"a","n":123456789012345678901234567890,"f":1.0e+300}`},
		{"the last duplicate unknown key wins",
			`{"path":"a","u":1,"u":2}`,
			`{"path":"a","u":2}`},
		{"surrogate pairs, escaped backslashes, and a user's own lone surrogate are kept",
			`{"path":"\ud83d\ude00 \\udce9 \\\ud83d\ude00","mine":"\udce9"}`,
			`{"path":"😀 \\udce9 \\😀","mine":"\udce9"}`},
		{"nested objects",
			`{"path":"a","upload":{"id":"i","store":"/s","path":"/s/i/a"},"error":{"stage":"upload","code":"upload.missing","message":"m"}}`,
			`{"path":"a","upload":{"id":"i","store":"/s","path":"/s/i/a"},"error":{"stage":"upload","code":"upload.missing","message":"m"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Record
			if err := json.Unmarshal([]byte(tt.in), &r); err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(&r)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.out {
				t.Errorf("got  %s\nwant %s", got, tt.out)
			}
		})
	}
}

func TestRecordRejects(t *testing.T) {
	tests := []struct{ in, want string }{
		{`[]`, "must be a JSON object"},
		{`{"name":"x"}`, `missing "path"`},
		{`{"path":null}`, `"path"`},
		{`{"path":7}`, `field "path"`},
		{`{"path":"a","size":"big"}`, `field "size"`},
		{`{"path":"a","size":1.5}`, `field "size"`},
		{`{"path":"a","upload":"x"}`, `field "upload"`},
		{`{"path":"a"} {"path":"b"}`, "more than one JSON value"},
		{`{"path":"a"`, ""},
		// Lone surrogates, as Python writes a file name that is not UTF-8, would decode as U+FFFD.
		{`{"path":"caf\udce9.txt"}`, `field "path": \udce9 is half of a UTF-16 surrogate pair`},
		{`{"path":"\ud83d"}`, `\ud83d is half`},
		{`{"path":"\ud83d\u0041"}`, `\ud83d is half`},
		{`{"path":"\ude00\ud83d"}`, `\ude00 is half`},
		{`{"path":"a","upload":{"id":"i","store":"/s","path":"/s/i/\udce9"}}`, `field "upload": \udce9`},
	}
	for _, tt := range tests {
		var r Record
		err := r.UnmarshalJSON([]byte(tt.in))
		if err == nil {
			t.Errorf("%s: accepted", tt.in)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %q does not say %q", tt.in, err, tt.want)
		}
	}
}

func TestReaderLinesAndErrors(t *testing.T) {
	long := strings.Repeat("x", 5<<20) // a line of megabytes
	in := "{\"path\":\"a\"}\n\n  \n{\"path\":\"b\",\"big\":\"" + long + "\"}\n{\"path\":\"c\"}\n{bad\n{\"path\":\"d\"}\n"
	r := NewReader(strings.NewReader(in))
	var paths []string
	var err error
	for {
		var rec *Record
		rec, err = r.Next()
		if err != nil {
			break
		}
		paths = append(paths, rec.Path)
		if rec.Path == "b" && len(rec.Extra[0].Value) != len(long)+2 {
			t.Errorf("long field cut to %d bytes", len(rec.Extra[0].Value))
		}
	}
	if strings.Join(paths, ",") != "a,b,c" {
		t.Errorf("records before the bad line: %v", paths)
	}
	if fault.CodeOf(err) != fault.ManifestInvalid || !strings.Contains(err.Error(), "line 6") {
		t.Errorf("error %v: want manifest.invalid naming line 6", err)
	}
	if _, again := r.Next(); again != err {
		t.Errorf("after an error Next returned %v", again)
	}
}

func TestReaderLastLineWithoutNewline(t *testing.T) {
	r := NewReader(strings.NewReader(`{"path":"a"}` + "\n" + `{"path":"b"}`))
	for _, want := range []string{"a", "b"} {
		rec, err := r.Next()
		if err != nil || rec.Path != want {
			t.Fatalf("got %v %v, want %s", rec, err, want)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("at the end: %v", err)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestReaderReadError(t *testing.T) {
	_, err := NewReader(failingReader{}).Next()
	if fault.CodeOf(err) != fault.ManifestInvalid || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("got %v", err)
	}
}

func TestWriterWritesLines(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	r := &Record{Path: "a", Extra: []Field{{"k", json.RawMessage(`"v"`)}}}
	r.SetSize(0)
	if err := w.Write(r); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(&Record{Path: "b", Error: &fault.Error{Stage: "sniff", Code: fault.FileMissing, Message: "b: no such file"}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := `{"path":"a","size":0,"k":"v"}` + "\n" +
		`{"path":"b","error":{"stage":"sniff","code":"file.missing","message":"b: no such file"}}` + "\n"
	if buf.String() != want {
		t.Errorf("got\n%swant\n%s", buf.String(), want)
	}
}

func TestErrorCodes(t *testing.T) {
	cause := errors.New("cause")
	e := fault.Errorf(fault.UploadOffset, "upload %s: offset %d, current %d: %w", "id", 5, 3, cause)
	if !errors.Is(e, cause) {
		t.Error("cause lost")
	}
	if e.Error() != "upload id: offset 5, current 3: cause (upload.offset)" {
		t.Errorf("message %q", e.Error())
	}
	wrapped := fault.AsError(errors.New("plain"), fault.FileUnreadable)
	if wrapped.Code != fault.FileUnreadable || fault.CodeOf(wrapped) != fault.FileUnreadable || fault.CodeOf(cause) != "" {
		t.Error("AsError/CodeOf")
	}
	r := &Record{Path: "p"}
	r.Fail("verify", e, fault.FileUnreadable)
	if !r.Failed() || r.Error.Stage != "verify" || r.Error.Code != fault.UploadOffset || e.Stage != "" {
		t.Errorf("Fail set %+v and changed the original to %+v", r.Error, e)
	}
}

// A line that is not valid UTF-8 is not a manifest: the error names the line and the offset of
// its first bad byte, and the records before it are read.
func TestReaderRefusesInvalidUTF8(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"Latin-1 in a path", "{\"path\":\"caf\xe9.txt\"}\n", "line 1: not valid UTF-8: byte 0xe9 at offset 12"},
		{"in a user's field, after good lines", "{\"path\":\"a\"}\n\n{\"path\":\"b\",\"n\":\"\xff\"}\n", "line 3: not valid UTF-8: byte 0xff at offset 17"},
		{"a truncated sequence at the end", "{\"path\":\"a\"}\n{\"path\":\"\xe2\x82", "line 2: not valid UTF-8: byte 0xe2 at offset 9"},
		{"an overlong slash", "{\"path\":\"\xc0\xaf\"}", "line 1: not valid UTF-8: byte 0xc0 at offset 9"},
		{"a surrogate encoded in UTF-8", "{\"path\":\"\xed\xa0\x80\"}", "line 1: not valid UTF-8: byte 0xed at offset 9"},
		{"after valid multi-byte text", "{\"path\":\"é\xe9\"}", "line 1: not valid UTF-8: byte 0xe9 at offset 11"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tt.in))
			var err error
			for err == nil {
				_, err = r.Next()
			}
			if fault.CodeOf(err) != fault.ManifestInvalid || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want manifest.invalid saying %q", err, tt.want)
			}
		})
	}
	// Valid UTF-8 in every form reads, and writes back unchanged.
	in := "{\"path\":\"café/日本.txt\",\"name\":\"😀\",\"note\":\"\xef\xbf\xbd\"}"
	rec, err := NewReader(strings.NewReader(in)).Next()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := rec.MarshalJSON()
	if string(out) != in {
		t.Errorf("wrote %s, want %s", out, in)
	}
}

// Quote keeps a name that prints as itself and quotes one that would not stay one readable line.
func TestQuote(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"a.txt", "a.txt"},
		{"dir/with space/café 日本.png", "dir/with space/café 日本.png"},
		{`back\slash`, `back\slash`},
		{"new\nline", `"new\nline"`},
		{"tab\there", `"tab\there"`},
		{"caf\xe9.txt", `"caf\xe9.txt"`},
		{"esc\x1b[31m", `"esc\x1b[31m"`},
		{`"quoted"`, `"\"quoted\""`},
		{"nbsp\u00a0", "nbsp\u00a0"},
		{"Screen Shot 2026-11-30 at 10.00.00\u202fAM.png", "Screen Shot 2026-11-30 at 10.00.00\u202fAM.png"},
		{"ideographic\u3000space, zw\u200cnj, 🎉, cafe\u0301", "ideographic\u3000space, zw\u200cnj, 🎉, cafe\u0301"},
		{"cr\rlf", `"cr\rlf"`},
		{"nel\u0085", `"nel\u0085"`},
		{"line\u2028sep", `"line\u2028sep"`},
		{"evil\u202egnp.exe", `"evil\u202egnp.exe"`},
		{"isolate\u2067x\u2069", `"isolate\u2067x\u2069"`},
		{"nbsp\u00a0and\nnewline", "\"nbsp\u00a0and\\nnewline\""},
		{"del\x7f", `"del\x7f"`},
		{"", ""},
	} {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
