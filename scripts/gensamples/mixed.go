package main

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// writeMixed writes n small files of mixed types into dir for the sniff benchmark
// (scripts/bench/sniff.sh): PNG, JPEG, text, JSON, PDF, ZIP and random binary in turn, each of a
// size drawn between 1 and 64 KiB, all from a fixed seed, so every run makes the same files.
func writeMixed(dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(42, 4242))
	for i := 0; i < n; i++ {
		size := 1024 + r.IntN(63*1024+1)
		name, data, err := mixedFile(r, i, size)
		if err != nil {
			return err
		}
		// Spread over 100 folders, as real trees are, and named so that lexical order mixes types.
		sub := filepath.Join(dir, fmt.Sprintf("d%02d", i%100))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%05d%s", i, name)), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// mixedFile makes file number i of about size bytes; the type turns with i.
func mixedFile(r *rand.Rand, i, size int) (ext string, data []byte, err error) {
	switch i % 7 {
	case 0: // PNG of noise, uncompressed: about 3 bytes a pixel
		side := max(1, isqrt(size/3))
		var b bytes.Buffer
		enc := png.Encoder{CompressionLevel: png.NoCompression}
		err = enc.Encode(&b, noise(r, side, side))
		return ".png", b.Bytes(), err
	case 1: // JPEG of noise at quality 75: about 1.5 bytes a pixel
		side := max(8, isqrt(size*2/3))
		var b bytes.Buffer
		err = jpeg.Encode(&b, noise(r, side, side), &jpeg.Options{Quality: 75})
		out := b.Bytes()
		// Put an Exif orientation in front, as cameras do.
		out = append(append([]byte{0xff, 0xd8}, ExifAPP1(binary.BigEndian, uint16(1+i%8))...), out[2:]...)
		return ".jpg", out, err
	case 2: // UTF-8 text
		var b strings.Builder
		for b.Len() < size {
			fmt.Fprintf(&b, "line %d: the quick brown fox – %x – jumps over the lazy dog, café ✓\n", b.Len(), r.Uint32())
		}
		return ".txt", []byte(b.String()[:size]), nil
	case 3: // JSON
		var b strings.Builder
		b.WriteString("[\n")
		for j := 0; b.Len() < size-64; j++ {
			fmt.Fprintf(&b, "  {\"id\": %d, \"name\": \"item-%x\", \"ok\": %v, \"score\": %d.%d},\n", j, r.Uint32(), j%2 == 0, r.IntN(100), r.IntN(100))
		}
		b.WriteString("  {\"id\": -1}\n]\n")
		return ".json", []byte(b.String()), nil
	case 4: // PDF padded with a stream of random hex
		pdf := genPDF()
		pad := make([]byte, max(0, size-len(pdf)))
		for j := range pad {
			pad[j] = "0123456789abcdef"[r.IntN(16)]
		}
		// Insert the padding as a comment line after the header, keeping the file a valid PDF
		// for readers that rebuild the xref, and its magic in place.
		head := []byte("%PDF-1.4\n")
		body := append(append(append([]byte{}, head...), '%'), pad...)
		body = append(body, '\n')
		return ".pdf", append(body, pdf[len(head):]...), nil
	case 5: // ZIP, one stored entry of random bytes
		var b bytes.Buffer
		zw := zip.NewWriter(&b)
		w, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("entry%d.bin", i), Method: zip.Store, Modified: epoch})
		if err != nil {
			return "", nil, err
		}
		w.Write(randomFrom(r, max(1, size-200)))
		err = zw.Close()
		return ".zip", b.Bytes(), err
	default: // random binary
		return ".bin", randomFrom(r, size), nil
	}
}

func noise(r *rand.Rand, w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for p := 0; p < len(img.Pix); p += 4 {
		v := r.Uint32()
		img.Pix[p], img.Pix[p+1], img.Pix[p+2], img.Pix[p+3] = uint8(v), uint8(v>>8), uint8(v>>16), 0xff
	}
	return img
}

func randomFrom(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func isqrt(n int) int {
	x := 0
	for (x+1)*(x+1) <= n {
		x++
	}
	return x
}
