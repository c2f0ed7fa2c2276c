package shrink

import (
	"bytes"
	"encoding/binary"
	"fmt"
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

// TestHEIFTransforms: irot and imir, libheif's to apply for a HEIC and shrink's for an AVIF
// (libavif leaves them to the reader), turn and mirror both the same way: in the order the item
// lists them (irot, then imir), imir 0 exchanging top and bottom and 1 left and right (ISO/IEC
// 23008-12:2022; libavif's and libheif's reading). Each file comes out as the scene displayed.
func TestHEIFTransforms(t *testing.T) {
	stored := photo(640, 480, 5)
	for y := 20; y < 120; y++ { // a dark block at the top left: no turn or mirror can hide
		for x := 20; x < 200; x++ {
			i := stored.PixOffset(x, y)
			copy(stored.Pix[i:i+4], []uint8{20, 20, 20, 255})
		}
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "stored.png")
	if err := os.WriteFile(src, encodePNG(t, stored), 0o600); err != nil {
		t.Fatal(err)
	}
	heicBase := filepath.Join(dir, "base.heic")
	run(t, "heif-enc", "-q", "90", "-o", heicBase, src)
	base, err := os.ReadFile(heicBase)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		irot, imir int // -1: none
	}{
		{"irot 1 imir 0", 1, 0},
		{"imir 1", -1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, heic, args := image.Image(stored), base, []string{"-d", "8", "--min", "8", "--max", "16", "-s", "8"}
			if tc.irot >= 0 {
				want, heic = rot90(want.(*image.RGBA), tc.irot), withProp(t, heic, "irot", byte(tc.irot))
				args = append(args, "--irot", fmt.Sprint(tc.irot))
			}
			want, heic = mirror(want.(*image.RGBA), tc.imir), withProp(t, heic, "imir", byte(tc.imir))
			args = append(args, "--imir", fmt.Sprint(tc.imir))
			avif := filepath.Join(dir, "t.avif")
			run(t, "avifenc", append(args, src, avif)...)
			hp := filepath.Join(dir, "t.heic")
			if err := os.WriteFile(hp, heic, 0o600); err != nil {
				t.Fatal(err)
			}
			b := want.Bounds()
			w, h := fit(b.Dx(), b.Dy(), 400)
			for _, p := range []string{hp, avif} {
				rec := shrinkFile(t, dir, p, 400)
				m, _ := decodeFile(t, rec.Path)
				if m.Bounds().Dx() != w || m.Bounds().Dy() != h {
					t.Fatalf("%s: %v, want %dx%d", filepath.Ext(p), m.Bounds(), w, h)
				}
				if q := psnr(m, refArea(want, w, h)); q < 30 {
					t.Errorf("%s: PSNR %.1f dB against the scene displayed", filepath.Ext(p), q)
				}
			}
		})
	}
}

// rot90 turns m n quarter turns anticlockwise (irot).
func rot90(m *image.RGBA, n int) *image.RGBA {
	for range n & 3 {
		b := m.Bounds()
		out := image.NewRGBA(image.Rect(0, 0, b.Dy(), b.Dx()))
		for y := 0; y < b.Dy(); y++ {
			for x := 0; x < b.Dx(); x++ {
				out.SetRGBA(y, b.Dx()-1-x, m.RGBAAt(x, y))
			}
		}
		m = out
	}
	return m
}

// mirror is imir of mode: 0 exchanges top and bottom, 1 left and right.
func mirror(m *image.RGBA, mode int) *image.RGBA {
	b := m.Bounds()
	out := image.NewRGBA(b)
	for y := 0; y < b.Dy(); y++ {
		for x := 0; x < b.Dx(); x++ {
			if mode == 0 {
				out.SetRGBA(x, b.Dy()-1-y, m.RGBAAt(x, y))
			} else {
				out.SetRGBA(b.Dx()-1-x, y, m.RGBAAt(x, y))
			}
		}
	}
	return out
}

// withIrot adds an irot property of angle a (quarter turns anticlockwise) to a HEIF file's
// primary item, as a phone writes it.
func withIrot(t testing.TB, f []byte, a byte) []byte { return withProp(t, f, "irot", a) }

// withProp adds a one-byte property box (irot, imir) to a HEIF file's primary item, after those
// it has: a box in ipco, its index at the end of the item's ipma entry, and the item locations
// (iloc) moved by the bytes added before the media data.
func withProp(t testing.TB, f []byte, typ string, a byte) []byte {
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
	propBox := append(append([]byte{0, 0, 0, 9}, typ...), a)
	grow := len(propBox) + len(newIpma) - (ipma.end - ipma.start)

	// Rebuild: boxes that contain a change grow by their share.
	var out []byte
	out = append(out, f[:ipco.end]...)
	out = append(out, propBox...)
	out = append(out, f[ipco.end:ipma.start]...)
	out = append(out, newIpma...)
	out = append(out, f[ipma.end:]...)
	add := func(at, n int) {
		binary.BigEndian.PutUint32(out[at:], binary.BigEndian.Uint32(out[at:])+uint32(n))
	}
	add(ipco.start, len(propBox))
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

// TestMain keeps the decoders' compiled code in the system's temporary folder, not the user's
// cache, and keeps it between runs, as shrink/doc's and sniff's tests keep pdfium's (sharing the
// folder): compiling libheif and libavif is most of this package's time under -race, and a run
// that compiles them anew tests wazero's compiler, not shrink. The cache is keyed by the module
// and wazero's version, so a stale one is never used. The test binary started with SHRINK_CHILD
// set is a child of a benchmark (see BenchmarkLyingHeaderRSS, Linux), sharing the parent's cache.
func TestMain(m *testing.M) {
	if spec := os.Getenv("SHRINK_CHILD"); spec != "" {
		setCodeCache(os.Getenv("SHRINK_CODE_CACHE"))
		os.Exit(child(spec))
	}
	setCodeCache(codeCache)
	os.Exit(m.Run())
}

// codeCache is the tests' folder for the decoders' compiled code.
var codeCache = filepath.Join(os.TempDir(), "attachctl-test-wasm")

// TestAVIFTransformsFromAnotherEncoder: AVIF files made by another encoder (cavif, from
// link-u/avif-sample-images), whose item lists irot before ispe, marks it essential and adds
// pasp: each stores the kimono photo turned or mirrored so that, displayed, it is the upright
// portrait kimono.avif is. Shrunk, every one must come out as that portrait.
func TestAVIFTransformsFromAnotherEncoder(t *testing.T) {
	dir := t.TempDir()
	ref := shrinkFile(t, dir, filepath.Join("testdata", "kimono.avif"), 400)
	upright, _ := decodeFile(t, ref.Path)
	b := upright.Bounds()
	if b.Dx() != 282 || b.Dy() != 400 {
		t.Fatalf("kimono.avif shrunk to %v, want the 282x400 portrait", b)
	}
	want := refArea(upright, b.Dx(), b.Dy())
	// The check can fail: the portrait half turned is far from itself.
	if q := psnr(rot90(toRGBA(upright), 2), want); q > 20 {
		t.Fatalf("PSNR %.1f dB between the portrait and its half turn: the comparison cannot tell", q)
	}
	for _, name := range []string{"kimono.rotate90.avif", "kimono.mirror-horizontal.avif", "kimono.mirror-vertical.rotate270.avif"} {
		t.Run(name, func(t *testing.T) {
			rec := shrinkFile(t, dir, filepath.Join("testdata", name), 400)
			m, _ := decodeFile(t, rec.Path)
			if m.Bounds() != b {
				t.Fatalf("shrunk to %v, want %v as displayed", m.Bounds(), b)
			}
			if q := psnr(m, want); q < 30 {
				t.Errorf("PSNR %.1f dB against the upright portrait", q)
			}
		})
	}
}

func toRGBA(m image.Image) *image.RGBA {
	b := m.Bounds()
	out := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	for y := 0; y < b.Dy(); y++ {
		for x := 0; x < b.Dx(); x++ {
			out.Set(x, y, m.At(b.Min.X+x, b.Min.Y+y))
		}
	}
	return out
}

// TestAVIFLargeMeta: an AVIF whose meta box is over 64 KiB (a 100 KB colour profile in its colr
// box, as a calibrated display's can be) is still read as an AVIF and turned by its irot; it
// was "no decoder for image/avif" and passed through as it was.
func TestAVIFLargeMeta(t *testing.T) {
	needTool(t, "avifenc")
	dir := t.TempDir()
	src := filepath.Join(dir, "stored.png")
	if err := os.WriteFile(src, encodePNG(t, photo(640, 480, 5)), 0o600); err != nil {
		t.Fatal(err)
	}
	icc := filepath.Join(dir, "big.icc")
	if err := os.WriteFile(icc, bytes.Repeat([]byte("a large profile "), 100<<10/16), 0o600); err != nil {
		t.Fatal(err)
	}
	avif := filepath.Join(dir, "big-meta.avif")
	run(t, "avifenc", "-s", "10", "--irot", "3", "--icc", icc, src, avif)
	rec := shrinkFile(t, dir, avif, 400)
	if rec.Shrink == nil || rec.Shrink.Action != Resized {
		t.Fatalf("shrink %+v, want resized", rec.Shrink)
	}
	if m, _ := decodeFile(t, rec.Path); m.Bounds().Dx() != 300 || m.Bounds().Dy() != 400 {
		t.Fatalf("shrunk to %v, want the 300x400 portrait irot 3 displays", m.Bounds())
	}
}

// TestAVIFCleanAperture: an AVIF's clap is cut before its irot and imir, as libheif does for a
// HEIC: cavif's kimono.crop.avif keeps 385x330 of the portrait, and the same crop of the stored
// turned and mirrored photo must display as the same rectangle.
func TestAVIFCleanAperture(t *testing.T) {
	dir := t.TempDir()
	ref := shrinkFile(t, dir, filepath.Join("testdata", "kimono.avif"), 2000)
	upright, _ := decodeFile(t, ref.Path)
	want := toRGBA(upright).SubImage(image.Rect(271, 39, 271+385, 39+330))
	for _, name := range []string{"kimono.crop.avif", "kimono.mirror-vertical.rotate270.crop.avif"} {
		t.Run(name, func(t *testing.T) {
			rec := shrinkFile(t, dir, filepath.Join("testdata", name), 2000)
			m, _ := decodeFile(t, rec.Path)
			if m.Bounds().Dx() != 385 || m.Bounds().Dy() != 330 {
				t.Fatalf("shrunk to %v, want the 385x330 clean aperture", m.Bounds())
			}
			if q := psnr(m, refArea(toRGBA(want), 385, 330)); q < 32 {
				t.Errorf("PSNR %.1f dB against that rectangle of the upright photo", q)
			}
		})
	}
}
