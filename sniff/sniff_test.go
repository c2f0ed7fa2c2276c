package sniff

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"image"
	_ "image/gif"
	_ "image/jpeg"
	_ "image/png"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/zeebo/blake3"
	_ "golang.org/x/image/bmp"
	_ "golang.org/x/image/tiff"
	_ "golang.org/x/image/webp"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
)

const samples = "../testdata/samples"

// TestFillSamples runs Fill on every committed sample, with and without hashing, and checks mime,
// kind (and that Content, given the bytes, agrees), size, BLAKE3 against a one-shot hash, and image dimensions against image.DecodeConfig.
func TestFillSamples(t *testing.T) {
	tests := []struct {
		name, mime, kind string
		w, h, orient     int
	}{
		{"image.png", "image/png", "image", 32, 24, 0},
		{"photo.jpg", "image/jpeg", "image", 40, 30, 6},
		{"photo-le.jpg", "image/jpeg", "image", 40, 30, 3},
		{"image.gif", "image/gif", "image", 20, 10, 0},
		{"image.webp", "image/webp", "image", 16, 8, 0},
		{"image.bmp", "image/bmp", "image", 24, 12, 0},
		{"image.tiff", "image/tiff", "image", 12, 9, 0},
		{"drawing.svg", "image/svg+xml", "text", 0, 0, 0},
		{"document.pdf", "application/pdf", "document", 0, 0, 0},
		{"archive.zip", "application/zip", "archive", 0, 0, 0},
		{"notes.txt.gz", "application/gzip", "archive", 0, 0, 0},
		{"bundle.tar", "application/x-tar", "archive", 0, 0, 0},
		{"sound.wav", "audio/wav", "audio", 0, 0, 0},
		{"clip.mp4", "video/mp4", "video", 0, 0, 0},
		{"data.json", "application/json", "text", 0, 0, 0},
		{"table.csv", "text/csv", "text", 0, 0, 0},
		{"multibyte.txt", "text/plain", "text", 0, 0, 0},
		{"x.png", "text/plain", "text", 0, 0, 0},
		{"x.txt", "application/octet-stream", "binary", 0, 0, 0},
		{"empty", "text/plain", "text", 0, 0, 0},
		{"mixed.log", "application/octet-stream", "binary", 0, 0, 0},
	}
	entries, err := os.ReadDir(samples)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(tests) {
		t.Errorf("%d samples, %d cases: every sample needs a case", len(entries), len(tests))
	}
	for _, tt := range tests {
		for _, noHash := range []bool{false, true} {
			t.Run(tt.name, func(t *testing.T) {
				path := filepath.Join(samples, tt.name)
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				rec := manifest.Record{Path: path}
				if err := Fill(&rec, Options{NoHash: noHash}); err != nil {
					t.Fatal(err)
				}
				if rec.Name != tt.name || rec.Size != int64(len(data)) || !rec.HasSize {
					t.Errorf("name %q size %d (known %v), want %q %d", rec.Name, rec.Size, rec.HasSize, tt.name, len(data))
				}
				if rec.Mime != tt.mime || rec.Kind != tt.kind {
					t.Errorf("mime %q kind %q, want %q %q", rec.Mime, rec.Kind, tt.mime, tt.kind)
				}
				if mime, kind := Content(data, true); mime != tt.mime || kind != tt.kind {
					t.Errorf("Content: mime %q kind %q, want %q %q as Fill says", mime, kind, tt.mime, tt.kind)
				}
				if rec.Width != tt.w || rec.Height != tt.h || rec.Orientation != tt.orient {
					t.Errorf("%dx%d orientation %d, want %dx%d orientation %d", rec.Width, rec.Height, rec.Orientation, tt.w, tt.h, tt.orient)
				}
				if tt.kind == "image" {
					cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
					if err != nil || cfg.Width != rec.Width || cfg.Height != rec.Height {
						t.Errorf("image.DecodeConfig says %dx%d (%v), we say %dx%d", cfg.Width, cfg.Height, err, rec.Width, rec.Height)
					}
				}
				want := blake3.Sum256(data)
				switch {
				case noHash && rec.Blake3 != "":
					t.Errorf("NoHash set blake3 %q", rec.Blake3)
				case !noHash && rec.Blake3 != hex.EncodeToString(want[:]):
					t.Errorf("blake3 %q, want %x", rec.Blake3, want)
				}
			})
		}
	}
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func fill(t *testing.T, path string, opts Options) manifest.Record {
	t.Helper()
	rec := manifest.Record{Path: path}
	if err := Fill(&rec, opts); err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestTextAcrossBuffers: text-ness is judged over the whole file, across the 256 KiB reads.
func TestTextAcrossBuffers(t *testing.T) {
	emoji := "📎" // 4 bytes
	// A rune straddling each read boundary, at every split point.
	for cut := 1; cut < len(emoji); cut++ {
		data := append(bytes.Repeat([]byte("a"), bufSize-cut), emoji...)
		data = append(data, "tail\n"...)
		if rec := fill(t, writeFile(t, "split.txt", data), Options{}); rec.Kind != "text" || rec.Mime != "text/plain" {
			t.Errorf("rune split %d/%d across the buffer boundary: %s %s, want text text/plain", cut, len(emoji)-cut, rec.Mime, rec.Kind)
		}
	}
	bad := []struct {
		name string
		data []byte
	}{
		{"NUL after the first buffer", append(bytes.Repeat([]byte("b"), bufSize+100), 0, 'x')},
		{"invalid byte as the very last", append(bytes.Repeat([]byte("c"), 3*bufSize), 0xff)},
		{"rune cut off at the end", append(bytes.Repeat([]byte("d"), 1000), emoji[:3]...)},
		{"lone continuation across a boundary", append(bytes.Repeat([]byte("e"), bufSize), 0x80, 'x')},
		{"lead byte before a boundary, ASCII after", append(bytes.Repeat([]byte("f"), bufSize-1), 0xe3, 'x', 'y')},
		{"text head, binary tail (8 KiB)", append(bytes.Repeat([]byte("log line\n"), 1000), 0, 1, 2, 0xfe)},
	}
	for _, b := range bad {
		rec := fill(t, writeFile(t, "bad.txt", b.data), Options{})
		if rec.Kind != "binary" || rec.Mime != "application/octet-stream" {
			t.Errorf("%s: %s %s, want binary application/octet-stream", b.name, rec.Mime, rec.Kind)
		}
	}
}

// TestNoHashJudgesTheHead: with NoHash, only the head is read, so a binary tail past it is not
// seen (documented on Options.NoHash); a binary tail inside it is.
func TestNoHashJudgesTheHead(t *testing.T) {
	far := append(bytes.Repeat([]byte("x"), noHashHead), 0)
	if rec := fill(t, writeFile(t, "far", far), Options{NoHash: true}); rec.Kind != "text" || rec.Blake3 != "" || rec.Size != int64(len(far)) {
		t.Errorf("NoHash, NUL past the head: %s %q size %d, want text, no hash, size %d", rec.Kind, rec.Blake3, rec.Size, len(far))
	}
	if rec := fill(t, writeFile(t, "far", far), Options{}); rec.Kind != "binary" {
		t.Errorf("full read, NUL past the head: %s, want binary", rec.Kind)
	}
	// A rune cut by the end of the head is not held against the file.
	cut := append(bytes.Repeat([]byte("y"), noHashHead-1), "é and more"...)
	if rec := fill(t, writeFile(t, "cut", cut), Options{NoHash: true}); rec.Kind != "text" {
		t.Errorf("NoHash, rune cut by the head: %s, want text", rec.Kind)
	}
}

func TestTextCheckChunks(t *testing.T) {
	inputs := []string{"", "plain", "日本語 📎 café", "a\x00b", "\xff", "ab\xe3\x81", "\xe3\x81\x82", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xef\xbf\xbd ok"}
	for _, in := range inputs {
		want := !strings.ContainsRune(in, 0) && utf8Valid(in)
		for size := 1; size <= len(in)+1; size++ {
			var tc textCheck
			for b := []byte(in); len(b) > 0; {
				n := min(size, len(b))
				tc.write(b[:n])
				b = b[n:]
			}
			if got := tc.text(true); got != want {
				t.Errorf("%q in chunks of %d: text=%v, want %v", in, size, got, want)
			}
		}
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// jpegWith builds a JPEG header: SOI, the given segments, then SOF0 of w x h (no pixel data).
func jpegWith(w, h int, segs ...[]byte) []byte {
	b := []byte{0xff, 0xd8}
	for _, s := range segs {
		b = append(b, s...)
	}
	sof := []byte{0xff, 0xc0, 0, 17, 8}
	sof = binary.BigEndian.AppendUint16(sof, uint16(h))
	sof = binary.BigEndian.AppendUint16(sof, uint16(w))
	sof = append(sof, 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1)
	b = append(b, sof...)
	return append(b, 0xff, 0xd9)
}

// exifSegment is an APP1 Exif segment whose IFD0 holds filler entries and then Orientation.
func exifSegment(bo binary.AppendByteOrder, orient uint16, typ uint16) []byte {
	var t []byte
	if bo == binary.LittleEndian {
		t = append(t, "II*\x00"...)
	} else {
		t = append(t, "MM\x00*"...)
	}
	t = bo.AppendUint32(t, 8)
	t = bo.AppendUint16(t, 2)
	t = bo.AppendUint16(t, 0x010f) // Make, ASCII, count 4: not a scalar, skipped
	t = bo.AppendUint16(t, 2)
	t = bo.AppendUint32(t, 4)
	t = append(t, "Go\x00\x00"...)
	t = bo.AppendUint16(t, 0x0112)
	t = bo.AppendUint16(t, typ)
	t = bo.AppendUint32(t, 1)
	if typ == 4 {
		t = bo.AppendUint32(t, uint32(orient))
	} else {
		t = bo.AppendUint16(t, orient)
		t = bo.AppendUint16(t, 0)
	}
	t = bo.AppendUint32(t, 0)
	seg := []byte{0xff, 0xe1}
	seg = binary.BigEndian.AppendUint16(seg, uint16(2+6+len(t)))
	seg = append(seg, "Exif\x00\x00"...)
	return append(seg, t...)
}

// appSegment is an APPn segment of n payload bytes.
func appSegment(marker byte, n int) []byte {
	seg := []byte{0xff, marker}
	seg = binary.BigEndian.AppendUint16(seg, uint16(n+2))
	return append(seg, bytes.Repeat([]byte{'z'}, n)...)
}

func TestJPEGHeader(t *testing.T) {
	orders := map[string]binary.AppendByteOrder{"big-endian": binary.BigEndian, "little-endian": binary.LittleEndian}
	for name, bo := range orders {
		for o := uint16(1); o <= 8; o++ {
			for _, typ := range []uint16{3, 4} {
				data := jpegWith(640, 480, appSegment(0xe0, 14), exifSegment(bo, o, typ))
				info := parseImage(&header{head: data, size: int64(len(data))})
				if info != (imageInfo{640, 480, int(o)}) {
					t.Errorf("%s type %d orientation %d: got %+v", name, typ, o, info)
				}
			}
		}
	}
	cases := []struct {
		name string
		data []byte
		want imageInfo
	}{
		{"no exif", jpegWith(3, 2), imageInfo{3, 2, 0}},
		{"orientation 9 is not one", jpegWith(3, 2, exifSegment(binary.BigEndian, 9, 3)), imageInfo{3, 2, 0}},
		{"orientation 0 is not one", jpegWith(3, 2, exifSegment(binary.LittleEndian, 0, 3)), imageInfo{3, 2, 0}},
		{"fill bytes before a marker", jpegWith(5, 4, []byte{0xff, 0xff}, exifSegment(binary.BigEndian, 8, 3)), imageInfo{5, 4, 8}},
		{"truncated before SOF", jpegWith(5, 4, exifSegment(binary.BigEndian, 8, 3))[:55], imageInfo{0, 0, 8}},
		{"not Exif APP1 (XMP)", jpegWith(5, 4, append([]byte{0xff, 0xe1, 0, 13}, "http://ns.a"...)), imageInfo{5, 4, 0}},
	}
	for _, c := range cases {
		if got := parseImage(&header{head: c.data, size: int64(len(c.data))}); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestJPEGSOFPastHead: large APP segments push SOF (and EXIF) past the 64 KiB head; Fill reaches
// them with bounded reads of the header.
func TestJPEGSOFPastHead(t *testing.T) {
	big := appSegment(0xe2, 60000)
	data := jpegWith(1234, 567, big, big, exifSegment(binary.LittleEndian, 5, 3), big)
	if len(data) < 2*headSize {
		t.Fatalf("test JPEG is only %d bytes", len(data))
	}
	for _, noHash := range []bool{false, true} {
		rec := fill(t, writeFile(t, "big.jpg", data), Options{NoHash: noHash})
		if rec.Kind != "image" || rec.Width != 1234 || rec.Height != 567 || rec.Orientation != 5 {
			t.Errorf("NoHash=%v: %s %dx%d orientation %d, want image 1234x567 orientation 5", noHash, rec.Kind, rec.Width, rec.Height, rec.Orientation)
		}
	}
}

func TestOtherHeaders(t *testing.T) {
	le := binary.LittleEndian
	bmpCore := append([]byte("BM"), make([]byte, 12)...)
	bmpCore = le.AppendUint32(bmpCore, 12)
	bmpCore = le.AppendUint16(bmpCore, 300)
	bmpCore = le.AppendUint16(bmpCore, 200)
	bmpTopDown := append([]byte("BM"), make([]byte, 12)...)
	bmpTopDown = le.AppendUint32(bmpTopDown, 40)
	bmpTopDown = le.AppendUint32(bmpTopDown, 7)
	bmpTopDown = le.AppendUint32(bmpTopDown, uint32(0xffffffff-8)) // -9
	vp8 := []byte("RIFF\x00\x00\x00\x00WEBPVP8 \x00\x00\x00\x00\x00\x00\x00\x9d\x01\x2a")
	vp8 = le.AppendUint16(vp8, 0xc000|321) // scale bits set: ignored
	vp8 = le.AppendUint16(vp8, 123)
	vp8x := []byte("RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x10\x00\x00\x00")
	vp8x = append(vp8x, 0x3f, 0x1f, 0x00, 0xff, 0x0f, 0x00) // 8000 x 4096
	tiffBE := []byte("MM\x00*\x00\x00\x00\x08\x00\x03")
	for _, e := range [][3]uint32{{256, 4, 70000}, {257, 3, 50}, {274, 3, 7}} {
		tiffBE = binary.BigEndian.AppendUint16(tiffBE, uint16(e[0]))
		tiffBE = binary.BigEndian.AppendUint16(tiffBE, uint16(e[1]))
		tiffBE = binary.BigEndian.AppendUint32(tiffBE, 1)
		if e[1] == 3 {
			tiffBE = binary.BigEndian.AppendUint16(tiffBE, uint16(e[2]))
			tiffBE = append(tiffBE, 0, 0)
		} else {
			tiffBE = binary.BigEndian.AppendUint32(tiffBE, e[2])
		}
	}
	cases := []struct {
		name string
		data []byte
		want imageInfo
	}{
		{"BMP core header", bmpCore, imageInfo{300, 200, 0}},
		{"BMP top-down", bmpTopDown, imageInfo{7, 9, 0}},
		{"WebP lossy", vp8, imageInfo{321, 123, 0}},
		{"WebP extended", vp8x, imageInfo{8000, 4096, 0}},
		{"TIFF big-endian, LONG width, orientation", tiffBE, imageInfo{70000, 50, 7}},
		{"PNG without IHDR", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIDAT\x00\x00\x00\x01\x00\x00\x00\x01"), imageInfo{}},
		{"GIF truncated", []byte("GIF89a\x01"), imageInfo{}},
		{"not an image", []byte("hello"), imageInfo{}},
	}
	for _, c := range cases {
		if got := parseImage(&header{head: c.data, size: int64(len(c.data))}); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestHeaderIndependentOfHead: a parse from a short head plus ReadAt equals a parse from the bytes
// in memory, for every sample.
func TestHeaderIndependentOfHead(t *testing.T) {
	entries, _ := os.ReadDir(samples)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(samples, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		checkHeadIndependence(t, e.Name(), data)
	}
}

func checkHeadIndependence(t *testing.T, name string, data []byte) {
	full := parseImage(&header{head: data, size: int64(len(data))})
	for _, n := range []int{0, 1, 12, 30, 100} {
		short := parseImage(&header{head: data[:min(n, len(data))], size: int64(len(data)), ra: bytes.NewReader(data)})
		if short != full {
			t.Errorf("%s: head of %d bytes gives %+v, all bytes give %+v", name, n, short, full)
		}
	}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		mime string
		text bool
		want [2]string
	}{
		{"application/pdf", true, [2]string{"application/pdf", "document"}},
		{"application/vnd.openxmlformats-officedocument.wordprocessingml.document", false, [2]string{"application/vnd.openxmlformats-officedocument.wordprocessingml.document", "document"}},
		{"application/vnd.oasis.opendocument.text", false, [2]string{"application/vnd.oasis.opendocument.text", "document"}},
		{"application/msword", false, [2]string{"application/msword", "document"}},
		{"application/epub+zip", false, [2]string{"application/epub+zip", "document"}},
		{"text/rtf", true, [2]string{"text/rtf", "document"}},
		{"audio/mpeg", false, [2]string{"audio/mpeg", "audio"}},
		{"video/webm", false, [2]string{"video/webm", "video"}},
		{"image/heic", false, [2]string{"image/heic", "image"}},
		{"image/x-icon", false, [2]string{"image/x-icon", "image"}},
		{"application/x-7z-compressed", false, [2]string{"application/x-7z-compressed", "archive"}},
		{"application/zstd", false, [2]string{"application/zstd", "archive"}},
		{"application/java-archive", false, [2]string{"application/java-archive", "archive"}},
		{"application/x-elf", false, [2]string{"application/x-elf", "binary"}},
		{"application/postscript", true, [2]string{"application/postscript", "text"}},
		{"image/svg+xml", true, [2]string{"image/svg+xml", "text"}},
		{"image/svg+xml", false, [2]string{"application/octet-stream", "binary"}},
		{"text/plain; charset=utf-8", true, [2]string{"text/plain", "text"}},
		{"text/plain; charset=utf-16le", false, [2]string{"application/octet-stream", "binary"}},
		{"text/html; charset=utf-8", true, [2]string{"text/html", "text"}},
		{"application/json", false, [2]string{"application/octet-stream", "binary"}},
		{"application/octet-stream", true, [2]string{"text/plain", "text"}},
		{"application/octet-stream", false, [2]string{"application/octet-stream", "binary"}},
	}
	for _, c := range cases {
		m := lookup(t, c.mime)
		mime, kind := classify(m, c.text)
		if [2]string{mime, kind} != c.want {
			t.Errorf("classify(%s, text=%v) = %s %s, want %v", c.mime, c.text, mime, kind, c.want)
		}
	}
}

// TestFillErrors: each failure has its code, names the path, and nothing blocks.
func TestFillErrors(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	loopA, loopB := filepath.Join(dir, "loopA"), filepath.Join(dir, "loopB")
	os.Symlink(loopB, loopA)
	os.Symlink(loopA, loopB)
	dangling := filepath.Join(dir, "dangling")
	os.Symlink(filepath.Join(dir, "nowhere"), dangling)
	file := writeFile(t, "f", []byte("x"))
	cases := []struct {
		path string
		code fault.Code
		msg  string
	}{
		{filepath.Join(dir, "missing.png"), fault.FileMissing, "no such file"},
		{filepath.Join(file, "under-a-file"), fault.FileMissing, "no such file"},
		{dangling, fault.FileMissing, "no such file"},
		{fifo, fault.FileNotRegular, "FIFO"},
		{sock, fault.FileNotRegular, "socket"},
		{"/dev/null", fault.FileNotRegular, "device"},
		{loopA, fault.FileUnreadable, "symbolic links"},
		{dir, fault.FileUnreadable, "directory"},
	}
	for _, c := range cases {
		rec := manifest.Record{Path: c.path}
		err := Fill(&rec, Options{})
		if fault.CodeOf(err) != c.code || !strings.Contains(err.Error(), c.path+": ") || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: error %v, want code %s naming the path and saying %q", c.path, err, c.code, c.msg)
		}
	}
	if err := Fill(&manifest.Record{Path: filepath.Join(dir, "missing")}, Options{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v is not fs.ErrNotExist", err)
	}
}

func TestFillUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads files whatever their mode")
	}
	p := writeFile(t, "secret", []byte("s"))
	if err := os.Chmod(p, 0); err != nil {
		t.Fatal(err)
	}
	err := Fill(&manifest.Record{Path: p}, Options{})
	if fault.CodeOf(err) != fault.FileUnreadable || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("mode 000: %v, want file.unreadable, permission denied", err)
	}
}

// TestFillChanged: a file whose stat size is not its length (as files in /proc) is file.changed.
func TestFillChanged(t *testing.T) {
	const p = "/proc/self/status"
	if fi, err := os.Stat(p); err != nil || fi.Size() != 0 {
		t.Skip("no /proc/self/status of stat size 0 here")
	}
	err := Fill(&manifest.Record{Path: p}, Options{})
	if fault.CodeOf(err) != fault.FileChanged || !strings.Contains(err.Error(), p) {
		t.Errorf("%s: %v, want file.changed", p, err)
	}
}

// TestFillFollowsSymlinkArgument: a symlink given as the path is followed; the name is the link's.
func TestFillFollowsSymlinkArgument(t *testing.T) {
	target := filepath.Join(samples, "image.png")
	abs, _ := filepath.Abs(target)
	link := filepath.Join(t.TempDir(), "shot.png")
	if err := os.Symlink(abs, link); err != nil {
		t.Fatal(err)
	}
	rec := fill(t, link, Options{})
	if rec.Name != "shot.png" || rec.Mime != "image/png" || rec.Width != 32 {
		t.Errorf("through a symlink: %+v", rec)
	}
}

// Keep holds the bytes of a file read whole (NoHash, at most the head) for the upload that
// follows, with the path read; a bigger file, a hashing sniff or no Keep holds nothing.
func TestKeepHoldsSmallFiles(t *testing.T) {
	small := bytes.Repeat([]byte("ab\n"), 1000)
	edge := bytes.Repeat([]byte("z"), noHashHead)
	big := bytes.Repeat([]byte("z"), noHashHead+1)
	for _, c := range []struct {
		name string
		data []byte
		opts Options
		held bool
	}{
		{"small", small, Options{NoHash: true, Keep: true}, true},
		{"empty", nil, Options{NoHash: true, Keep: true}, true},
		{"the head exactly", edge, Options{NoHash: true, Keep: true}, true},
		{"past the head", big, Options{NoHash: true, Keep: true}, false},
		{"hashing", small, Options{Keep: true}, false},
		{"not asked", small, Options{NoHash: true}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, "f", c.data)
			rec := fill(t, path, c.opts)
			h, ok := rec.Sniffed.(Held)
			if ok != c.held {
				t.Fatalf("held %v (%T), want %v", ok, rec.Sniffed, c.held)
			}
			if ok && (h.Path != path || !bytes.Equal(h.Bytes, c.data) || int64(len(h.Bytes)) != rec.Size || h.Bytes == nil) {
				t.Fatalf("held %q of %s (%d bytes), want the %d bytes of %s", h.Bytes, h.Path, len(h.Bytes), len(c.data), path)
			}
		})
	}
}

// TestFillListed: a record the walk listed as a regular file (Listed) is sniffed as any other,
// its marker cleared, without the stat before the open (one allocation fewer: the stat's copy of
// the path); a listed path that is no longer a regular file still fails as one, without blocking.
func TestFillListed(t *testing.T) {
	for _, name := range []string{"image.png", "photo.jpg", "data.json", "archive.zip", "empty"} {
		p := filepath.Join(samples, name)
		want := fill(t, p, Options{NoHash: true})
		got := manifest.Record{Path: p, Sniffed: Listed{}}
		if err := Fill(&got, Options{NoHash: true}); err != nil {
			t.Fatal(err)
		}
		if got.Sniffed != nil || got.Mime != want.Mime || got.Kind != want.Kind || got.Size != want.Size || got.Width != want.Width {
			t.Errorf("%s listed: %+v, want %+v", name, got, want)
		}
	}
	p := filepath.Join(samples, "image.png")
	allocs := func(listed bool) float64 {
		return testing.AllocsPerRun(200, func() {
			rec := manifest.Record{Path: p}
			if listed {
				rec.Sniffed = Listed{}
			}
			if err := Fill(&rec, Options{NoHash: true}); err != nil {
				t.Fatal(err)
			}
		})
	}
	// The floor (scripts/bench/headfloor) allocates once a file too: open(2)'s copy of the path.
	if a, b := allocs(true), allocs(false); a > 1 && runtime.GOOS != "windows" || a >= b {
		t.Errorf("Fill of a listed PNG: %v allocations, of one not listed %v; want at most 1, and fewer", a, b)
	}

	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		code fault.Code
	}{
		{fifo, fault.FileNotRegular},
		{"/dev/null", fault.FileNotRegular},
		{dir, fault.FileUnreadable},
		{filepath.Join(dir, "gone"), fault.FileMissing},
	} {
		rec := manifest.Record{Path: c.path, Sniffed: Listed{}}
		if err := Fill(&rec, Options{NoHash: true, Folders: true}); fault.CodeOf(err) != c.code {
			t.Errorf("%s listed, since replaced: %v, want %s", c.path, err, c.code)
		}
	}
}
