package sniff

import (
	"bytes"
	"encoding/binary"
	"image"
	"testing"
)

// mkbox is an ISO BMFF box: size, type, payload.
func mkbox(typ string, payload ...[]byte) []byte {
	body := bytes.Join(payload, nil)
	b := binary.BigEndian.AppendUint32(nil, uint32(8+len(body)))
	return append(append(b, typ...), body...)
}

// heifFile is a HEIF container whose primary item 1 has the given properties (boxes, listed in
// ipma in this order) and an item 2 with a different ispe, as an iPhone grid's tiles have.
func heifFile(brand string, props ...[]byte) []byte {
	tile := mkbox("ispe", []byte{0, 0, 0, 0}, be32(512), be32(512))
	ipco := mkbox("ipco", append(append([][]byte{}, tile), props...)...)
	ipma := []byte{0, 0, 0, 0}
	ipma = binary.BigEndian.AppendUint32(ipma, 2)
	ipma = append(ipma, 0, 2, 1, 0x81) // item 2: property 1, essential
	ipma = append(ipma, 0, 1, byte(len(props)))
	for i := range props {
		ipma = append(ipma, byte(i+2))
	}
	meta := mkbox("meta", []byte{0, 0, 0, 0},
		mkbox("hdlr", make([]byte, 8), []byte("pict"), make([]byte, 13)),
		mkbox("pitm", []byte{0, 0, 0, 0, 0, 1}),
		mkbox("iprp", ipco, mkbox("ipma", ipma)))
	compat := []byte("mif1")
	if brand == "isom" { // an MP4, not an image
		compat = []byte("mp41")
	}
	ftyp := mkbox("ftyp", []byte(brand), []byte{0, 0, 0, 0}, compat, []byte(brand))
	return append(append(ftyp, meta...), mkbox("mdat", make([]byte, 100))...)
}

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

func ispe(w, h uint32) []byte { return mkbox("ispe", []byte{0, 0, 0, 0}, be32(w), be32(h)) }
func irot(a byte) []byte      { return mkbox("irot", []byte{a}) }
func imir(axis byte) []byte   { return mkbox("imir", []byte{axis}) }

// clap is a clean aperture of w x h whole pixels, offset (dx, dy) from the centre.
func clap(w, h uint32, dx, dy int32) []byte {
	return mkbox("clap", be32(w), be32(1), be32(h), be32(1), be32(uint32(dx)), be32(1), be32(uint32(dy)), be32(1))
}

// TestHEIFCleanAperture: the clap rectangle in stored pixels, rounded as libheif rounds it
// (cavif's kimono.crop.avif: 385x330 at 103,-308 from the centre of 722x1024 is 271,39), and
// none for one outside the image, one after a rotation, or one of the whole image.
func TestHEIFCleanAperture(t *testing.T) {
	for _, tt := range []struct {
		name string
		file []byte
		want image.Rectangle
	}{
		{"kimono crop", heifFile("avif", ispe(722, 1024), clap(385, 330, 103, -308)), image.Rect(271, 39, 656, 369)},
		{"listed before ispe", heifFile("avif", clap(385, 330, 103, -308), ispe(722, 1024)), image.Rect(271, 39, 656, 369)},
		{"centred, even in odd", heifFile("avif", ispe(5, 5), clap(2, 2, 0, 0)), image.Rect(1, 1, 3, 3)},
		{"before irot", heifFile("avif", ispe(40, 30), clap(20, 10, 0, 0), irot(1)), image.Rect(10, 10, 30, 20)},
		{"after irot: not MIAF, ignored", heifFile("avif", ispe(40, 30), irot(1), clap(20, 10, 0, 0)), image.Rectangle{}},
		{"outside the image", heifFile("avif", ispe(40, 30), clap(20, 10, 15, 0)), image.Rectangle{}},
		{"the whole image", heifFile("avif", ispe(40, 30), clap(40, 30, 0, 0)), image.Rectangle{}},
		{"zero denominator", heifFile("avif", ispe(40, 30), mkbox("clap", make([]byte, 32))), image.Rectangle{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := HEIF(tt.file)
			if !ok || p.Crop != tt.want {
				t.Fatalf("Crop %v (ok %v), want %v", p.Crop, ok, tt.want)
			}
		})
	}
}

// TestHEIFHeader: the primary item's ispe is the size (as stored, not turned), its irot and
// imir come out as the EXIF orientation that does the same, and the colr box is read.
func TestHEIFHeader(t *testing.T) {
	icc := []byte("an ICC profile's bytes")
	bigICC := bytes.Repeat([]byte("a calibrated display's profile "), 3000) // 93 KB
	nclx := mkbox("colr", []byte("nclx"), []byte{0, 12, 0, 13, 0, 6, 0x80})
	tests := []struct {
		name        string
		file        []byte
		w, h, o     int
		icc, hasNCL bool
	}{
		{"plain heic", heifFile("heic", ispe(4032, 3024)), 4032, 3024, 0, false, false},
		{"irot 1 anticlockwise", heifFile("heic", ispe(4032, 3024), irot(1)), 4032, 3024, 8, false, false},
		{"irot 2", heifFile("heic", ispe(40, 30), irot(2)), 40, 30, 3, false, false},
		{"irot 3 = iPhone upright", heifFile("heic", ispe(4032, 3024), irot(3), mkbox("colr", []byte("prof"), icc)), 4032, 3024, 6, true, false},
		{"imir 0: top and bottom", heifFile("avif", ispe(40, 30), imir(0)), 40, 30, 4, false, false},
		{"imir 1: left and right", heifFile("avif", ispe(40, 30), imir(1)), 40, 30, 2, false, false},
		{"irot 1 then imir 0", heifFile("avif", ispe(40, 30), irot(1), imir(0)), 40, 30, 5, false, false},
		{"irot 3 then imir 0", heifFile("avif", ispe(40, 30), irot(3), imir(0)), 40, 30, 7, false, false},
		{"irot 1 then imir 1", heifFile("avif", ispe(40, 30), irot(1), imir(1)), 40, 30, 7, false, false},
		{"irot 0 is no turn", heifFile("avif", ispe(40, 30), irot(0), nclx), 40, 30, 1, false, true},
		{"not HEIF brand", heifFile("isom", ispe(40, 30)), 0, 0, 0, false, false},
		{"meta over 64 KiB: a large ICC profile", heifFile("avif", ispe(4032, 3024), mkbox("colr", []byte("prof"), bigICC), irot(3)), 4032, 3024, 6, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := HEIF(tt.file)
			if ok != (tt.w > 0) || p.Width != tt.w || p.Height != tt.h || p.Orientation != tt.o {
				t.Fatalf("HEIF = %+v, %v; want %dx%d orientation %d", p, ok, tt.w, tt.h, tt.o)
			}
			if (p.ICC != nil) != tt.icc || tt.icc && !bytes.Equal(p.ICC, icc) && !bytes.Equal(p.ICC, bigICC) {
				t.Errorf("ICC %q", p.ICC)
			}
			if (p.NCLX != nil) != tt.hasNCL || tt.hasNCL && *p.NCLX != (NCLX{12, 13, 6, true}) {
				t.Errorf("NCLX %+v", p.NCLX)
			}
			w, h, o := Image(tt.file)
			if w != tt.w || h != tt.h || o != tt.o {
				t.Errorf("Image = %d %d %d", w, h, o)
			}
			for n := range len(tt.file) { // truncated anywhere: no panic
				HEIF(tt.file[:n])
			}
		})
	}
}

// TestHEIFLargeMetaFromFile: a file whose meta box (a large ICC profile in its colr) is past the
// read pass's 64 KiB head is still read for size and orientation, by the bounded extra read.
func TestHEIFLargeMetaFromFile(t *testing.T) {
	icc := bytes.Repeat([]byte{0x5a}, 200<<10)
	file := heifFile("avif", ispe(4032, 3024), mkbox("colr", []byte("prof"), icc), irot(1))
	rec := fill(t, writeFile(t, "big-meta.avif", file), Options{})
	if rec.Mime != "image/avif" || rec.Width != 4032 || rec.Height != 3024 || rec.Orientation != 8 {
		t.Fatalf("record %+v: want image/avif 4032x3024 orientation 8", rec)
	}
}
