// Command gensamples writes attachctl's own sample files, deterministically and with Go code only:
//
//	go run ./scripts/gensamples testdata/samples
//
// With -mixed N DIR it writes instead N small files of mixed types (PNG, JPEG, text, JSON, PDF,
// ZIP, random binary; 1 to 64 KiB each; fixed seed) for the sniff benchmark, scripts/bench/sniff.sh.
//
// Every run writes the same bytes (TestGeneratedSamplesAreCommitted checks the committed folder
// against a fresh run), so the folder holds only the samples themselves. Each file is small (well
// under 64 KiB) and exercises one rule of `attachctl sniff`:
//
//	image.png             PNG, 32x24 (stored, uncompressed zlib blocks: independent of compress/flate)
//	photo.jpg             JPEG, 40x30, with an APP1 Exif segment (big-endian) saying orientation 6
//	photo-le.jpg          JPEG, 40x30, little-endian Exif, orientation 3
//	image.gif             GIF, 20x10
//	image.webp            WebP lossless (VP8L), 16x8, a single colour, bitstream written by hand
//	image.bmp             BMP, 24x12 (golang.org/x/image/bmp)
//	image.tiff            TIFF, 12x9 (golang.org/x/image/tiff)
//	drawing.svg           SVG: kind text, mime image/svg+xml
//	document.pdf          a minimal one-page PDF written by hand, with a correct xref table
//	archive.zip           ZIP with two stored entries
//	notes.txt.gz          gzip (stored blocks)
//	bundle.tar            tar with two entries
//	sound.wav             WAV, RIFF header and 8-bit PCM written by hand
//	clip.mp4              MP4: ftyp and a minimal moov/mvhd box
//	data.json, table.csv  JSON and CSV: kind text
//	multibyte.txt         UTF-8 text with Japanese, emoji and accented letters
//	x.png                 text named .png: kind text
//	x.txt                 random bytes with NULs (fixed seed) named .txt: kind binary
//	empty                 an empty file: text/plain, kind text
//	mixed.log             8 KiB of text, then a binary tail: kind binary
package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"

	"github.com/attachctl/attachctl/scripts/docgen"
)

func main() {
	var err error
	switch {
	case len(os.Args) == 2:
		err = write(os.Args[1])
	case len(os.Args) == 4 && os.Args[1] == "-mixed":
		var n int
		if _, err = fmt.Sscan(os.Args[2], &n); err == nil {
			err = writeMixed(os.Args[3], n)
		}
	default:
		fmt.Fprintln(os.Stderr, "usage: go run ./scripts/gensamples DIR\n       go run ./scripts/gensamples -mixed N DIR")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gensamples:", err)
		os.Exit(1)
	}
}

// write makes dir and writes every sample into it.
func write(dir string) error {
	files, err := Samples()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// File is one sample.
type File struct {
	Name string
	Data []byte
}

// epoch is the fixed time stamped into archives.
var epoch = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

// Samples returns every sample, in a fixed order.
func Samples() ([]File, error) {
	var files []File
	add := func(name string, data []byte, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		files = append(files, File{name, data})
		return nil
	}
	gens := []struct {
		name string
		gen  func() ([]byte, error)
	}{
		{"image.png", genPNG},
		{"photo.jpg", func() ([]byte, error) { return genJPEG(binary.BigEndian, 6) }},
		{"photo-le.jpg", func() ([]byte, error) { return genJPEG(binary.LittleEndian, 3) }},
		{"image.gif", genGIF},
		{"image.webp", func() ([]byte, error) {
			return WebPLossless(16, 8, color.NRGBA{R: 0x20, G: 0x80, B: 0xe0, A: 0xff}), nil
		}},
		{"image.bmp", func() ([]byte, error) {
			return encode(func(b *bytes.Buffer) error { return bmp.Encode(b, gradient(24, 12)) })
		}},
		{"image.tiff", func() ([]byte, error) {
			return encode(func(b *bytes.Buffer) error { return tiff.Encode(b, gradient(12, 9), nil) })
		}},
		{"drawing.svg", func() ([]byte, error) { return []byte(svg), nil }},
		{"document.pdf", func() ([]byte, error) { return genPDF(), nil }},
		{"archive.zip", genZIP},
		{"notes.txt.gz", genGzip},
		{"bundle.tar", genTar},
		{"sound.wav", func() ([]byte, error) { return genWAV(), nil }},
		{"clip.mp4", func() ([]byte, error) { return genMP4(), nil }},
		{"data.json", func() ([]byte, error) { return []byte(jsonText), nil }},
		{"table.csv", func() ([]byte, error) { return []byte(csvText), nil }},
		{"multibyte.txt", func() ([]byte, error) { return []byte(multibyte), nil }},
		{"x.png", func() ([]byte, error) { return []byte("This is plain text, whatever the name says.\n"), nil }},
		{"x.txt", func() ([]byte, error) { return randomBytes(4096, 1), nil }},
		{"empty", func() ([]byte, error) { return []byte{}, nil }},
		{"mixed.log", func() ([]byte, error) { return genMixed(), nil }},
	}
	for _, g := range gens {
		data, err := g.gen()
		if err := add(g.name, data, err); err != nil {
			return nil, err
		}
	}
	return files, nil
}

func encode(f func(*bytes.Buffer) error) ([]byte, error) {
	var b bytes.Buffer
	err := f(&b)
	return b.Bytes(), err
}

// gradient is a deterministic RGBA test picture.
func gradient(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.SetNRGBA(x, y, color.NRGBA{R: uint8(x * 255 / w), G: uint8(y * 255 / h), B: uint8((x + y) * 4), A: 0xff})
		}
	}
	return img
}

func genPNG() ([]byte, error) {
	enc := png.Encoder{CompressionLevel: png.NoCompression}
	return encode(func(b *bytes.Buffer) error { return enc.Encode(b, gradient(32, 24)) })
}

// genJPEG encodes a 40x30 picture and inserts, right after SOI, an APP1 segment holding an Exif
// TIFF structure in byte order bo whose IFD0 has one entry: Orientation (0x0112) = orient.
func genJPEG(bo binary.AppendByteOrder, orient uint16) ([]byte, error) {
	raw, err := encode(func(b *bytes.Buffer) error { return jpeg.Encode(b, gradient(40, 30), &jpeg.Options{Quality: 80}) })
	if err != nil {
		return nil, err
	}
	return append(append(raw[:2:2], ExifAPP1(bo, orient)...), raw[2:]...), nil
}

// ExifAPP1 is a JPEG APP1 segment (marker included) carrying only an EXIF orientation.
func ExifAPP1(bo binary.AppendByteOrder, orient uint16) []byte {
	var t []byte
	if bo == binary.LittleEndian {
		t = append(t, "II*\x00"...)
	} else {
		t = append(t, "MM\x00*"...)
	}
	t = bo.AppendUint32(t, 8)      // IFD0 offset
	t = bo.AppendUint16(t, 1)      // one entry
	t = bo.AppendUint16(t, 0x0112) // Orientation
	t = bo.AppendUint16(t, 3)      // SHORT
	t = bo.AppendUint32(t, 1)      // count
	t = bo.AppendUint16(t, orient) // value, left-justified in the 4-byte field
	t = bo.AppendUint16(t, 0)
	t = bo.AppendUint32(t, 0) // no next IFD
	seg := []byte{0xff, 0xe1}
	seg = binary.BigEndian.AppendUint16(seg, uint16(2+6+len(t)))
	seg = append(seg, "Exif\x00\x00"...)
	return append(seg, t...)
}

func genGIF() ([]byte, error) {
	pal := color.Palette{color.Black, color.White, color.NRGBA{R: 0xff, A: 0xff}, color.NRGBA{B: 0xff, A: 0xff}}
	img := image.NewPaletted(image.Rect(0, 0, 20, 10), pal)
	for i := range img.Pix {
		img.Pix[i] = uint8(i % len(pal))
	}
	return encode(func(b *bytes.Buffer) error { return gif.Encode(b, img, nil) })
}

// bitWriter writes VP8L's least-significant-bit-first bit stream.
type bitWriter struct {
	out   []byte
	acc   uint64
	nbits uint
}

func (w *bitWriter) put(v uint64, n uint) {
	w.acc |= v << w.nbits
	w.nbits += n
	for w.nbits >= 8 {
		w.out = append(w.out, byte(w.acc))
		w.acc >>= 8
		w.nbits -= 8
	}
}

func (w *bitWriter) bytes() []byte {
	if w.nbits > 0 {
		w.out = append(w.out, byte(w.acc))
	}
	return w.out
}

// WebPLossless writes a w x h WebP (VP8L) image of a single colour c. The bit stream: header
// (signature 0x2f, 14-bit width-1, 14-bit height-1, alpha bit, 3-bit version 0), no transform, no
// colour cache, no meta prefix codes, then five "simple" prefix codes of one symbol each (green,
// red, blue, alpha, distance). A one-symbol code has length zero, so the pixels take no bits.
func WebPLossless(w, h int, c color.NRGBA) []byte {
	var bw bitWriter
	bw.put(0x2f, 8)
	bw.put(uint64(w-1), 14)
	bw.put(uint64(h-1), 14)
	alpha := uint64(0)
	if c.A != 0xff {
		alpha = 1
	}
	bw.put(alpha, 1)
	bw.put(0, 3) // version
	bw.put(0, 1) // no transform
	bw.put(0, 1) // no colour cache
	bw.put(0, 1) // no meta prefix codes
	for _, sym := range []uint8{c.G, c.R, c.B, c.A, 0} {
		bw.put(1, 1) // simple code
		bw.put(0, 1) // one symbol
		bw.put(1, 1) // 8-bit symbol
		bw.put(uint64(sym), 8)
	}
	data := bw.bytes()
	chunk := append([]byte("VP8L"), binary.LittleEndian.AppendUint32(nil, uint32(len(data)))...)
	chunk = append(chunk, data...)
	if len(data)%2 == 1 {
		chunk = append(chunk, 0)
	}
	out := append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(4+len(chunk)))...)
	out = append(out, "WEBP"...)
	return append(out, chunk...)
}

const svg = `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="64" height="32" viewBox="0 0 64 32">
  <rect x="1" y="1" width="62" height="30" rx="4" fill="#2080e0"/>
  <text x="32" y="21" font-size="12" text-anchor="middle" fill="white">attachctl</text>
</svg>
`

// genPDF writes a one-page PDF 1.4 with a text stream, computing the xref offsets.
func genPDF() []byte {
	content := "BT /F1 18 Tf 36 120 Td (attachctl sample document) Tj ET"
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 200] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}
	return docgen.PDF(objs, "")
}

func genZIP() ([]byte, error) {
	return encode(func(b *bytes.Buffer) error {
		zw := zip.NewWriter(b)
		for _, e := range []struct{ name, body string }{
			{"hello.txt", "hello from attachctl\n"},
			{"data/numbers.csv", "n,square\n1,1\n2,4\n3,9\n"},
		} {
			w, err := zw.CreateHeader(&zip.FileHeader{Name: e.name, Method: zip.Store, Modified: epoch})
			if err != nil {
				return err
			}
			if _, err := w.Write([]byte(e.body)); err != nil {
				return err
			}
		}
		return zw.Close()
	})
}

func genGzip() ([]byte, error) {
	return encode(func(b *bytes.Buffer) error {
		zw, err := gzip.NewWriterLevel(b, gzip.NoCompression)
		if err != nil {
			return err
		}
		zw.Name, zw.ModTime = "notes.txt", epoch
		if _, err := zw.Write([]byte(strings.Repeat("gzip sample line\n", 20))); err != nil {
			return err
		}
		return zw.Close()
	})
}

func genTar() ([]byte, error) {
	return encode(func(b *bytes.Buffer) error {
		tw := tar.NewWriter(b)
		for _, e := range []struct{ name, body string }{
			{"readme.txt", "a tar sample\n"},
			{"data.json", "{\"ok\":true}\n"},
		} {
			hdr := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), ModTime: epoch,
				Uname: "attachctl", Gname: "attachctl", Format: tar.FormatUSTAR}
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			if _, err := tw.Write([]byte(e.body)); err != nil {
				return err
			}
		}
		return tw.Close()
	})
}

// genWAV writes a RIFF/WAVE file: 8 kHz, mono, 8-bit PCM, 0.1 s of a 400 Hz triangle wave.
func genWAV() []byte {
	const rate, n = 8000, 800
	pcm := make([]byte, n)
	for i := range pcm {
		phase := (i * 400 * 256 / rate) % 256 // 0..255 per period
		v := phase * 2
		if phase >= 128 {
			v = (255 - phase) * 2
		}
		pcm[i] = byte(v)
	}
	le := binary.LittleEndian
	b := []byte("RIFF")
	b = le.AppendUint32(b, uint32(4+8+16+8+len(pcm)))
	b = append(b, "WAVEfmt "...)
	b = le.AppendUint32(b, 16)
	b = le.AppendUint16(b, 1)    // PCM
	b = le.AppendUint16(b, 1)    // channels
	b = le.AppendUint32(b, rate) // sample rate
	b = le.AppendUint32(b, rate) // byte rate
	b = le.AppendUint16(b, 1)    // block align
	b = le.AppendUint16(b, 8)    // bits per sample
	b = append(b, "data"...)
	b = le.AppendUint32(b, uint32(len(pcm)))
	return append(b, pcm...)
}

// box is an ISO BMFF box: 32-bit size, type, payload.
func box(typ string, payload ...[]byte) []byte {
	n := 8
	for _, p := range payload {
		n += len(p)
	}
	b := binary.BigEndian.AppendUint32(nil, uint32(n))
	b = append(b, typ...)
	for _, p := range payload {
		b = append(b, p...)
	}
	return b
}

// genMP4 writes ftyp (isom, compatible isom/iso2/mp41) and a moov holding a version-0 mvhd.
func genMP4() []byte {
	be := binary.BigEndian
	ftyp := box("ftyp", []byte("isom"), be.AppendUint32(nil, 0x200), []byte("isomiso2mp41"))
	var mvhd []byte
	mvhd = append(mvhd, 0, 0, 0, 0)          // version 0, flags
	mvhd = be.AppendUint32(mvhd, 0)          // creation time
	mvhd = be.AppendUint32(mvhd, 0)          // modification time
	mvhd = be.AppendUint32(mvhd, 1000)       // timescale
	mvhd = be.AppendUint32(mvhd, 0)          // duration
	mvhd = be.AppendUint32(mvhd, 0x10000)    // rate 1.0
	mvhd = be.AppendUint16(mvhd, 0x100)      // volume 1.0
	mvhd = append(mvhd, make([]byte, 10)...) // reserved
	for _, v := range []uint32{0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x40000000} {
		mvhd = be.AppendUint32(mvhd, v) // unity matrix
	}
	mvhd = append(mvhd, make([]byte, 24)...) // pre-defined
	mvhd = be.AppendUint32(mvhd, 2)          // next track id
	return append(ftyp, box("moov", box("mvhd", mvhd))...)
}

const jsonText = `{
  "name": "attachctl",
  "samples": ["image.png", "photo.jpg", "document.pdf"],
  "nested": {"ok": true, "count": 3, "ratio": 0.5, "none": null}
}
`

const csvText = `id,name,size,kind
1,image.png,1234,image
2,document.pdf,567,document
3,"notes, with a comma.txt",89,text
`

const multibyte = `日本語のテキストです。ファイルの種類を判定します。
Emoji: 📎🗂️🚀 ✅
Accents: café, naïve, façade, Ærøskøbing, Ångström, jalapeño, Straße
Greek: Καλημέρα κόσμε; Cyrillic: Привет, мир
`

// randomBytes returns n bytes from a PCG seeded with seed; they include NULs.
func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	b[0] = 0 // certainly binary from the first byte
	return b
}

// genMixed is 8 KiB of log lines, then 2 KiB of binary.
func genMixed() []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < 8192; i++ {
		fmt.Fprintf(&b, "2024-01-02T03:04:05Z INFO request %05d served in 12ms\n", i)
	}
	b.Truncate(8192)
	return append(b.Bytes(), randomBytes(2048, 2)...)
}
