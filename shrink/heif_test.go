package shrink

import (
	"bytes"
	"encoding/binary"
	"image"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/attachctl/attachctl/manifest"
)

// needTool returns the path of an external tool a test needs. Missing, the test is skipped, but
// under CI=true it fails: CI must install it (.ci/run).
func needTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is needed and missing (install it in .ci/run)", name)
		}
		t.Skipf("%s not installed", name)
	}
	return p
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(needTool(t, name), args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// upright is the scene as the camera saw it, portrait, and stored is how a phone held upright
// stores it: turned a quarter anticlockwise, so that orientation 6 (a quarter clockwise) shows it.
func upright(t testing.TB) (upright, stored *image.RGBA) {
	upright = photo(480, 640, 11)
	// Marks that a wrong turn cannot hide: a dark block at the top left.
	for y := 20; y < 120; y++ {
		for x := 20; x < 160; x++ {
			i := upright.PixOffset(x, y)
			copy(upright.Pix[i:i+4], []uint8{20, 20, 20, 255})
		}
	}
	stored = orient(upright, 8).(*image.RGBA)
	if back := orient(stored, 6).(*image.RGBA); !bytes.Equal(back.Pix, upright.Pix) {
		t.Fatal("orientations 8 and 6 are not inverse")
	}
	return upright, stored
}

// checkUpright shrinks the file at path to a long edge of 400 and checks the JPEG that comes out
// against the upright scene, area-averaged: portrait 300x400 and a PSNR of at least 30 dB.
func checkUpright(t *testing.T, path string, want image.Image, dir string) image.Image {
	t.Helper()
	rec := shrinkFile(t, dir, path, 400)
	if rec.Shrink.Action != Resized || rec.Mime != "image/jpeg" || rec.Size > DefaultMaxBytes {
		t.Fatalf("shrink %+v, %s of %d bytes", rec.Shrink, rec.Mime, rec.Size)
	}
	m, format := decodeFile(t, rec.Path)
	b := m.Bounds()
	if format != "jpeg" || b.Dx() != 300 || b.Dy() != 400 || rec.Width != 300 || rec.Height != 400 {
		t.Fatalf("%s of %v (record %dx%d), want a JPEG of 300x400", format, b, rec.Width, rec.Height)
	}
	if p := psnr(m, refArea(want, 300, 400)); p < 30 {
		t.Errorf("PSNR %.1f dB against the upright scene", p)
	}
	return m
}

// shrinkFile copies the file at path into dir and shrinks it to a long edge of maxEdge.
func shrinkFile(t *testing.T, dir, path string, maxEdge int) *manifest.Record {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := record(t, dir, filepath.Base(path), data)
	if err := Record(rec, Options{MaxEdge: maxEdge, OutDir: filepath.Join(dir, "out")}); err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestHEICUpright: an iPhone-style HEIC, stored on its side with irot and an EXIF orientation
// of 6 both saying to turn it, comes out upright: turned once, not twice.
func TestHEICUpright(t *testing.T) {
	want, stored := upright(t)
	dir := t.TempDir()
	jpg := filepath.Join(dir, "stored.jpg")
	if err := os.WriteFile(jpg, withExif(encodeJPEG(t, stored, 95), 6), 0o600); err != nil {
		t.Fatal(err)
	}
	heic := filepath.Join(dir, "IMG_0001.HEIC")
	run(t, "heif-enc", "-q", "90", "-o", heic, jpg)
	data, err := os.ReadFile(heic)
	if err != nil {
		t.Fatal(err)
	}
	data = withIrot(t, data, 3) // three quarters anticlockwise: the iPhone's upright portrait
	if err := os.WriteFile(heic, data, 0o600); err != nil {
		t.Fatal(err)
	}
	p, ok := heifHeader(data)
	if !ok || p.format != "heic" || p.Width != 640 || p.Height != 480 || p.Orientation != 6 {
		t.Fatalf("header %+v", p)
	}
	got := checkUpright(t, heic, want, dir)
	// libheif's own command-line decoder, the reference: it turns the image by irot too.
	ref := filepath.Join(dir, "reference.png")
	run(t, "heif-convert", heic, ref)
	refImg, _ := decodeFile(t, ref)
	if b := refImg.Bounds(); b.Dx() != 480 || b.Dy() != 640 {
		t.Fatalf("heif-convert made %v", b)
	}
	if p := psnr(got, refArea(refImg, 300, 400)); p < 30 {
		t.Errorf("PSNR %.1f dB against heif-convert's decode", p)
	}
}

// TestAVIFUpright: libavif leaves irot to the reader; shrink applies it once.
func TestAVIFUpright(t *testing.T) {
	want, stored := upright(t)
	dir := t.TempDir()
	png := filepath.Join(dir, "stored.png")
	if err := os.WriteFile(png, encodePNG(t, stored), 0o600); err != nil {
		t.Fatal(err)
	}
	avif := filepath.Join(dir, "photo.avif")
	run(t, "avifenc", "-d", "8", "--min", "8", "--max", "16", "-s", "8", "--irot", "3", png, avif)
	checkUpright(t, avif, want, dir)
}

// withIrot adds an irot property of angle a (quarter turns anticlockwise) to a HEIF file's
// primary item, as a phone writes it: a box in ipco, its index in the item's ipma entry, and the
// item locations (iloc) moved by the bytes added before the media data.
func withIrot(t testing.TB, f []byte, a byte) []byte {
	t.Helper()
	type span struct{ start, end int } // a box, header included
	find := func(d []byte, from, to int, typ string) (span, bool) {
		for i := from; i+8 <= to; {
			n := int(binary.BigEndian.Uint32(d[i:]))
			if n < 8 || i+n > to {
				break
			}
			if string(d[i+4:i+8]) == typ {
				return span{i, i + n}, true
			}
			i += n
		}
		return span{}, false
	}
	must := func(s span, ok bool) span {
		if !ok {
			t.Fatal("HEIF box missing")
		}
		return s
	}
	meta := must(find(f, 0, len(f), "meta"))
	pitm := must(find(f, meta.start+12, meta.end, "pitm"))
	primary := int(binary.BigEndian.Uint16(f[pitm.start+12:]))
	iprp := must(find(f, meta.start+12, meta.end, "iprp"))
	ipco := must(find(f, iprp.start+8, iprp.end, "ipco"))
	ipma := must(find(f, iprp.start+8, iprp.end, "ipma"))
	iloc := must(find(f, meta.start+12, meta.end, "iloc"))
	nprops := 0
	for i := ipco.start + 8; i < ipco.end; i += int(binary.BigEndian.Uint32(f[i:])) {
		nprops++
	}
	if f[ipma.start+8] != 0 || f[ipma.start+11]&1 != 0 {
		t.Fatal("ipma version or flags not handled")
	}
	// The new ipma: the primary item's entry gets one more association.
	var newIpma []byte
	d := f[ipma.start+16 : ipma.end]
	for len(d) >= 3 {
		id, count := int(binary.BigEndian.Uint16(d)), int(d[2])
		entry := append([]byte(nil), d[:3+count]...)
		if id == primary {
			entry[2]++
			entry = append(entry, 0x80|byte(nprops+1))
		}
		newIpma = append(newIpma, entry...)
		d = d[3+count:]
	}
	newIpma = append(append([]byte(nil), f[ipma.start+8:ipma.start+16]...), newIpma...)
	newIpma = append(binary.BigEndian.AppendUint32(nil, uint32(8+len(newIpma))), append([]byte("ipma"), newIpma...)...)
	irotBox := []byte{0, 0, 0, 9, 'i', 'r', 'o', 't', a}
	grow := len(irotBox) + len(newIpma) - (ipma.end - ipma.start)

	// Rebuild: boxes that contain a change grow by their share.
	var out []byte
	out = append(out, f[:ipco.end]...)
	out = append(out, irotBox...)
	out = append(out, f[ipco.end:ipma.start]...)
	out = append(out, newIpma...)
	out = append(out, f[ipma.end:]...)
	add := func(at, n int) {
		binary.BigEndian.PutUint32(out[at:], binary.BigEndian.Uint32(out[at:])+uint32(n))
	}
	add(ipco.start, len(irotBox))
	add(iprp.start, grow)
	add(meta.start, grow)
	// iloc lies before or after iprp; its file offsets point past meta, which grew.
	at := iloc.start
	if iloc.start > iprp.start {
		at += grow
	}
	v := out[at+8]
	if v > 1 {
		t.Fatal("iloc version not handled")
	}
	offSize, lenSize := int(out[at+12]>>4), int(out[at+12]&15)
	baseSize, idxSize := int(out[at+13]>>4), int(out[at+13]&15)
	if v == 0 {
		idxSize = 0
	}
	p := at + 14
	count := int(binary.BigEndian.Uint16(out[p:]))
	p += 2
	shift := func(p, size int) {
		switch size {
		case 4:
			binary.BigEndian.PutUint32(out[p:], binary.BigEndian.Uint32(out[p:])+uint32(grow))
		case 8:
			binary.BigEndian.PutUint64(out[p:], binary.BigEndian.Uint64(out[p:])+uint64(grow))
		}
	}
	for range count {
		p += 2 // item id
		method := 0
		if v == 1 {
			method = int(out[p+1] & 15)
			p += 2
		}
		p += 2 // data reference index
		if method == 0 && baseSize > 0 {
			shift(p, baseSize)
		}
		p += baseSize
		extents := int(binary.BigEndian.Uint16(out[p:]))
		p += 2
		for range extents {
			p += idxSize
			if method == 0 && baseSize == 0 {
				shift(p, offSize)
			}
			p += offSize + lenSize
		}
	}
	return out
}

// TestMain keeps the decoders' compiled code in a folder of the test run, not the user's cache.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "shrink-code-cache-")
	if err != nil {
		panic(err)
	}
	setCodeCache(dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
