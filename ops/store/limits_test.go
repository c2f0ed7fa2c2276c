package store

import (
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
)

func TestLimitsAdmit(t *testing.T) {
	l := Limits{MaxFile: 100, MaxBytes: 250, MaxFiles: 4}
	for _, tc := range []struct {
		size int64
		used Usage
		code fault.Code
		says string
	}{
		{80, Usage{}, "", ""},
		{100, Usage{Files: 3, Bytes: 150}, "", ""},
		{101, Usage{}, fault.UploadTooLarge, "101 B is over the largest file store S takes, 100 B"},
		{80, Usage{Files: 3, Bytes: 240}, fault.StoreFull, "80 B more would pass its max-bytes 250 B (240 B used in 3 uploads)"},
		{1, Usage{Files: 4, Bytes: 4}, fault.StoreFull, "it holds 4 uploads, its max-files is 4"},
		{-1, Usage{Files: 3, Bytes: 250}, "", ""}, // open size: only the count now, the bytes at each chunk
		{0, Usage{Files: 3, Bytes: 250}, "", ""},
	} {
		err := l.Admit("S", "f", tc.size, tc.used)
		if fault.CodeOf(err) != tc.code || err != nil && !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Admit(%d, %+v) = %v, want %q %q", tc.size, tc.used, err, tc.code, tc.says)
		}
	}
	if err := (Limits{}).Admit("S", "f", 1<<40, Usage{Files: 1 << 20, Bytes: 1 << 50}); err != nil {
		t.Errorf("no limits: %v", err)
	}
	if err := l.AdmitBytes("S", "f", 50, 120, Usage{Files: 1, Bytes: 50}); fault.CodeOf(err) != fault.UploadTooLarge {
		t.Errorf("chunk past max-file: %v", err)
	}
	if err := l.AdmitBytes("S", "f", 0, 90, Usage{Files: 3, Bytes: 200}); fault.CodeOf(err) != fault.StoreFull {
		t.Errorf("chunk past max-bytes: %v", err)
	}
	if err := l.AdmitBytes("S", "f", 10, 60, Usage{Files: 3, Bytes: 200}); err != nil {
		t.Errorf("chunk within: %v", err)
	}
}

func TestParseMark(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Limits
		bad  bool
	}{
		{"attachctl store: uploads of one chat. Managed by attachctl; see its README.\n", Limits{}, false}, // an earlier version's
		{"attachctl store\n", Limits{}, false},
		{string(MarkText(Limits{MaxFile: 1, MaxBytes: 2, MaxFiles: 3})), Limits{MaxFile: 1, MaxBytes: 2, MaxFiles: 3}, false},
		{`{"attachctl":"store","limits":{}}`, Limits{}, false},
		{`{"attachctl":"store","limits":{"maxFile":-1}}`, Limits{}, true},
		{`{"attachctl":"store","limits":{"maxFile":"big"}}`, Limits{}, true},
		{`{"something":"else"}`, Limits{}, true},
		// The S3 store's form: lines, its limits on one of them.
		{"attachctl store\nlimits {\"maxFile\":1,\"maxFiles\":3}\nconditional writes checked 2026-12-03T00:00:00Z\n", Limits{MaxFile: 1, MaxFiles: 3}, false},
		{"attachctl store\nconditional writes checked 2026-12-03T00:00:00Z\n", Limits{}, false},
		{"attachctl store\nlimits {\"maxBytes\":-5}\n", Limits{}, true},
		{"attachctl store\nlimits big\n", Limits{}, true},
	} {
		got, err := ParseMark("m", []byte(tc.in))
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseMark(%q) = %+v, %v", tc.in, got, err)
		}
	}
}

func TestHumanAndBytes(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 999: "999 B", 1000: "1.0 kB", 1949: "1.9 kB", 1_900_000: "1.9 MB", 12_400_000: "12 MB",
		999_490: "999 kB", 999_500: "1.0 MB", 2_147_483_648: "2.1 GB", 5e15: "5.0 PB", 5e18: "5000 PB",
	} {
		if got := Human(n); got != want {
			t.Errorf("Human(%d): %q, want %q", n, got, want)
		}
	}
	for n, want := range map[int64]string{
		999: "999 B", 1000: "1.0 kB (1000 bytes)", 12_400_000: "12 MB (12400000 bytes)", 3000: "3.0 kB (3000 bytes)",
	} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d): %q, want %q", n, got, want)
		}
	}
}

// MarkWith keeps a mark's form: the S3 store's lines keep their notes (what it found of the
// server's conditional writes), anything else becomes the JSON mark; either reads back its limits.
func TestMarkWith(t *testing.T) {
	l := Limits{MaxFile: 1, MaxBytes: 2, MaxFiles: 3}
	for _, tc := range []struct{ in, want string }{
		{"", string(MarkText(l))},
		{string(MarkText(Limits{})), string(MarkText(l))},
		{"attachctl store: uploads of one chat. Managed by attachctl; see its README.\n", string(MarkText(l))},
		{"attachctl store\n", string(MarkText(l))},
		{"attachctl store\nconditional writes checked T\n",
			"attachctl store\nlimits {\"maxFile\":1,\"maxBytes\":2,\"maxFiles\":3}\nconditional writes checked T\n"},
		{"attachctl store\nlimits {\"maxFile\":9}\nconditional writes checked T",
			"attachctl store\nlimits {\"maxFile\":1,\"maxBytes\":2,\"maxFiles\":3}\nconditional writes checked T\n"},
	} {
		got := MarkWith([]byte(tc.in), l)
		if string(got) != tc.want {
			t.Errorf("MarkWith(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if back, err := ParseMark("m", got); err != nil || back != l {
			t.Errorf("ParseMark(MarkWith(%q)) = %+v, %v", tc.in, back, err)
		}
	}
	if got := string(MarkWith([]byte("attachctl store\nnote\n"), Limits{})); got != "attachctl store\nnote\n" {
		t.Errorf("no limits in lines: %q, want no limits line", got)
	}
}
