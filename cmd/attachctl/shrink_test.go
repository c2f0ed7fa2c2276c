package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/jpeg"
	"image/png"
	"os"
	"strconv"
)

// mkimage makes images for the shrink scripts:
//
//	mkimage photo W H FILE [ORIENTATION]   noisy JPEG, with an EXIF orientation when given
//	mkimage shot W H FILE                  flat PNG with 1-pixel strokes
//	mkimage alpha W H FILE                 PNG with transparency
//	mkimage bomb W H FILE                  a tiny PNG whose header claims W x H pixels
func init() { helperCmds["mkimage"] = mkimage }

func mkimage(sc helper, args []string) error {
	if len(args) < 4 {
		return fmt.Errorf("usage: mkimage photo|shot|alpha|bomb W H FILE [ORIENTATION]")
	}
	w, err1 := strconv.Atoi(args[1])
	h, err2 := strconv.Atoi(args[2])
	if err1 != nil || err2 != nil {
		return fmt.Errorf("bad size %s x %s", args[1], args[2])
	}
	var buf bytes.Buffer
	switch args[0] {
	case "photo":
		// Straight into Pix: this runs as the -race test binary, where every SetRGBA call is
		// instrumented.
		m := image.NewRGBA(image.Rect(0, 0, w, h))
		seed := uint32(1)
		for y := 0; y < h; y++ {
			row := m.Pix[y*m.Stride : y*m.Stride+4*w]
			for x := 0; x < w; x++ {
				seed = seed*1664525 + 1013904223
				n := uint8(seed >> 27)
				row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = uint8(x*200/w)+n, uint8(y*200/h)+n, 100+n, 255
			}
		}
		if err := jpeg.Encode(&buf, m, &jpeg.Options{Quality: 95}); err != nil {
			return err
		}
		b := buf.Bytes()
		if len(args) > 4 {
			o, _ := strconv.Atoi(args[4])
			b = withOrientation(b, o)
		}
		return os.WriteFile(sc.abs(args[3]), b, 0o644)
	case "shot", "alpha":
		m := image.NewNRGBA(image.Rect(0, 0, w, h))
		for y := 0; y < h; y++ {
			row := m.Pix[y*m.Stride : y*m.Stride+4*w]
			for x := 0; x < w; x++ {
				c := [4]uint8{240, 240, 245, 255}
				if y%6 == 0 && x%40 < 30 {
					c = [4]uint8{20, 20, 20, 255}
				}
				if args[0] == "alpha" && x < w/2 {
					c[3] = 128
				}
				copy(row[4*x:4*x+4], c[:])
			}
		}
		if err := png.Encode(&buf, m); err != nil {
			return err
		}
		return os.WriteFile(sc.abs(args[3]), buf.Bytes(), 0o644)
	case "bomb":
		buf.WriteString("\x89PNG\r\n\x1a\n")
		ihdr := make([]byte, 13)
		binary.BigEndian.PutUint32(ihdr, uint32(w))
		binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
		ihdr[8], ihdr[9] = 8, 2
		chunk(&buf, "IHDR", ihdr)
		chunk(&buf, "IDAT", []byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})
		chunk(&buf, "IEND", nil)
		return os.WriteFile(sc.abs(args[3]), buf.Bytes(), 0o644)
	}
	return fmt.Errorf("unknown kind %q", args[0])
}

func chunk(b *bytes.Buffer, typ string, data []byte) {
	binary.Write(b, binary.BigEndian, uint32(len(data)))
	crc := crc32.NewIEEE()
	crc.Write([]byte(typ))
	crc.Write(data)
	b.WriteString(typ)
	b.Write(data)
	binary.Write(b, binary.BigEndian, crc.Sum32())
}

// withOrientation inserts an EXIF APP1 segment with orientation o after the JPEG's SOI.
func withOrientation(jpg []byte, o int) []byte {
	tiff := []byte{'M', 'M', 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, byte(o), 0, 0, 0, 0, 0, 0}
	payload := append([]byte("Exif\x00\x00"), tiff...)
	seg := []byte{0xFF, 0xE1, byte((len(payload) + 2) >> 8), byte(len(payload) + 2)}
	out := append(append(append([]byte{}, jpg[:2]...), seg...), payload...)
	return append(out, jpg[2:]...)
}
