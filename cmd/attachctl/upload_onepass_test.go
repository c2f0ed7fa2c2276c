package main

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest"
	"github.com/zeebo/blake3"
)

// rchar is the bytes this process has read so far (/proc/self/io).
func rchar(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skipf("no /proc/self/io: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Skip("no rchar in /proc/self/io")
	return 0
}

// TestUploadPathIsOnePassAndSniffsWhole: `attachctl upload FILE` reads FILE once, and its record
// is the one `attachctl sniff FILE | attachctl upload` gives: a file whose first megabytes are text
// and whose tail is binary is binary, and its BLAKE3 is the file's.
func TestUploadPathIsOnePassAndSniffsWhole(t *testing.T) {
	dir := t.TempDir()
	// 2.3 MiB of text: nine of sniff's 256 KiB reads, far past the 64 KiB head it judges the type on.
	text := bytes.Repeat([]byte("a line of log text with ünïcode too\n"), 1<<16)
	cases := []struct {
		name, kind, mime string
		data             []byte
	}{
		{"mixed.log", manifest.KindBinary, "application/octet-stream", append(append([]byte(nil), text...), 0, 1, 2, 0xff)},
		{"all.log", manifest.KindText, "text/plain", text},
	}
	for _, tc := range cases {
		path := filepath.Join(dir, tc.name)
		if err := os.WriteFile(path, tc.data, 0o600); err != nil {
			t.Fatal(err)
		}
		sum := blake3.Sum256(tc.data)
		before := rchar(t)
		var stdout, stderr bytes.Buffer
		args := []string{"attachctl", "upload", "--store", filepath.Join(dir, "store"), "--progress", "never", path}
		if code := runWith(args, strings.NewReader(""), &stdout, &stderr); code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.name, code, stderr.String())
		}
		read := rchar(t) - before
		rec, err := manifest.NewReader(&stdout).Next()
		if err != nil {
			t.Fatal(err)
		}
		if rec.Kind != tc.kind || rec.Mime != tc.mime || rec.Blake3 != hex.EncodeToString(sum[:]) || rec.Upload == nil {
			t.Errorf("%s: got kind %s mime %s blake3 %s upload %v", tc.name, rec.Kind, rec.Mime, rec.Blake3, rec.Upload)
		}
		if size := int64(len(tc.data)); read > size+size/4 {
			t.Errorf("%s: %d bytes read for a file of %d: not one pass", tc.name, read, size)
		}
		var sn bytes.Buffer
		runWith([]string{"attachctl", "sniff", path}, strings.NewReader(""), &sn, &stderr)
		want, _ := manifest.NewReader(&sn).Next()
		if want == nil || want.Kind != rec.Kind || want.Mime != rec.Mime || want.Blake3 != rec.Blake3 {
			t.Errorf("%s: sniff says %+v, upload %+v", tc.name, want, rec)
		}
	}
}
