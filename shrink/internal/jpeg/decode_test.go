package jpeg

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	stdjpeg "image/jpeg"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// generated returns the JPEGs the tests make with image/jpeg's encoder: photo-like and
// screenshot-like pictures, as RGBA, grayscale and YCbCr inputs, at odd and even sizes and
// qualities 1, 50, 85 and 100.
func generated(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	sizes := [][2]int{{1, 1}, {2, 3}, {8, 8}, {17, 9}, {9, 17}, {16, 16}, {33, 31}, {64, 48}, {333, 250}}
	for _, s := range sizes {
		w, h := s[0], s[1]
		ph := photoImage(w, h, uint64(w*1000+h), 6)
		sc := screenImage(w, h)
		inputs := []struct {
			name string
			m    image.Image
		}{
			{"photo", ph},
			{"screen", sc},
			{"photo.gray", grayOf(ph)},
			{"screen.gray", grayOf(sc)},
			{"photo.ycc444", ycbcrOf(ph, image.YCbCrSubsampleRatio444)},
			{"photo.ycc420", ycbcrOf(ph, image.YCbCrSubsampleRatio420)},
		}
		for _, in := range inputs {
			for _, q := range []int{1, 50, 85, 100} {
				out[fmt.Sprintf("%s.%dx%d.q%d", in.name, w, h, q)] = encode(t, in.m, q)
			}
		}
	}
	return out
}

func sortedKeys(m map[string][]byte) []string { return slices.Sorted(maps.Keys(m)) }

// TestSameAsStdlib: every generated and every stored JPEG decodes to the same image, and the
// same DecodeConfig, as with image/jpeg.
func TestSameAsStdlib(t *testing.T) {
	t.Parallel() // pure decoding: these run beside each other
	all := generated(t)
	for k, v := range files(t) {
		all[k] = v
	}
	all["ycck"] = ycck(t)
	decoded := 0
	kinds := map[string]bool{}
	for _, name := range sortedKeys(all) {
		data := all[name]
		if checkSame(t, name, data) {
			decoded++
			m, _ := Decode(bytes.NewReader(data))
			kind := fmt.Sprintf("%T", m)
			if y, ok := m.(*image.YCbCr); ok {
				kind += y.SubsampleRatio.String()
			}
			kinds[kind] = true
		}
		wc, werr := stdjpeg.DecodeConfig(bytes.NewReader(data))
		gc, gerr := DecodeConfig(bytes.NewReader(data))
		if fmt.Sprint(werr) != fmt.Sprint(gerr) || wc != gc {
			t.Errorf("%s: DecodeConfig %+v, %v; image/jpeg's %+v, %v", name, gc, gerr, wc, werr)
		}
	}
	// All decode (the truncated progressive file ends between scans), and every kind of
	// output is there.
	if decoded != len(all) {
		t.Errorf("%d of %d decoded, want all", decoded, len(all))
	}
	want := []string{"*image.CMYK", "*image.Gray", "*image.RGBA", "*image.YCbCrYCbCrSubsampleRatio410",
		"*image.YCbCrYCbCrSubsampleRatio411", "*image.YCbCrYCbCrSubsampleRatio420", "*image.YCbCrYCbCrSubsampleRatio422",
		"*image.YCbCrYCbCrSubsampleRatio440", "*image.YCbCrYCbCrSubsampleRatio444"}
	for _, k := range want {
		if !kinds[k] {
			t.Errorf("no test image decodes to %s; have %v", k, kinds)
		}
	}
}

// TestConvertMade decodes JPEGs that ImageMagick makes at test time: progressive, with
// restart intervals, at every subsampling, grayscale and CMYK, at odd sizes. It is skipped
// where ImageMagick is not installed, and fails for that under CI=true.
func TestConvertMade(t *testing.T) {
	t.Parallel() // pure decoding: these run beside each other
	convert := imageMagick(t)
	if testing.Short() {
		t.Skip("short")
	}
	dir := t.TempDir()
	var srcs []string
	for _, s := range [][2]int{{1, 1}, {17, 9}, {61, 47}, {333, 250}} {
		p := filepath.Join(dir, fmt.Sprintf("src%dx%d.png", s[0], s[1]))
		if err := os.WriteFile(p, encodePNGFor(t, photoImage(s[0], s[1], uint64(s[0]), 6)), 0o600); err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, p)
	}
	variants := [][]string{
		{"-interlace", "Plane"},
		{"-interlace", "Plane", "-sampling-factor", "1x1"},
		{"-interlace", "Plane", "-sampling-factor", "2x1"},
		{"-interlace", "Plane", "-sampling-factor", "1x2"},
		{"-interlace", "Plane", "-sampling-factor", "4x1"},
		{"-interlace", "Plane", "-colorspace", "Gray"},
		{"-interlace", "Plane", "-quality", "100"},
		{"-interlace", "Plane", "-quality", "5"},
		{"-define", "jpeg:restart-interval=1"},
		{"-define", "jpeg:restart-interval=3", "-sampling-factor", "2x1"},
		{"-define", "jpeg:restart-interval=1", "-interlace", "Plane"},
		{"-define", "jpeg:restart-interval=2", "-colorspace", "Gray"},
		{"-colorspace", "CMYK"},
		{"-colorspace", "CMYK", "-interlace", "Plane"},
		{"-colorspace", "CMYK", "-define", "jpeg:restart-interval=1"},
		{"-sampling-factor", "4x2"},
		{"-define", "jpeg:optimize-coding=true", "-quality", "95"},
		{"-define", "jpeg:arithmetic-coding=true"}, // unsupported: both must fail alike
	}
	n := 0
	for _, src := range srcs {
		for i, v := range variants {
			out := filepath.Join(dir, fmt.Sprintf("%s.%d.jpg", filepath.Base(src), i))
			args := append(append([]string{src}, v...), out)
			if msg, err := exec.Command(convert, args...).CombinedOutput(); err != nil {
				t.Logf("convert %v: %v %s", args, err, msg)
				continue
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			checkSame(t, strings.Join(args[1:len(args)-1], " ")+" "+filepath.Base(src), data)
			n++
		}
	}
	if n < len(srcs)*(len(variants)-1) {
		t.Errorf("convert made %d files, want at least %d", n, len(srcs)*(len(variants)-1))
	}
}

// testSeeds are the inputs the truncation, corruption and reader tests work on: small
// baseline, progressive, restart, grayscale and CMYK files.
func testSeeds(t testing.TB) map[string][]byte {
	t.Helper()
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return map[string][]byte{
		"photo.40x30.q85":  encode(t, photoImage(40, 30, 5, 6), 85),
		"screen.33x17.q50": encode(t, screenImage(33, 17), 50),
		"gray.21x13.q100":  encode(t, grayOf(photoImage(21, 13, 3, 10)), 100),
		"restart2":         read("testdata/video-001.restart2.jpeg"),
		"progressive420":   read("testdata/video-001.q50.420.progressive.jpeg"),
		"progressive.gray": read("testdata/video-005.gray.q50.progressive.jpeg"),
		"cmyk":             read("../../testdata/video-001.cmyk.jpeg"),
	}
}

// cuts are where the truncation and reader tests cut a seed: every byte of a small one; of a
// larger one, every byte of the headers up to the first scan's data, of the last 80 bytes,
// and of 80 bytes after every other marker in the data (restart markers, later scans), and
// some 600 places in between.
func cuts(data []byte) []int {
	if len(data) <= 1500 {
		out := make([]int, len(data))
		for i := range out {
			out[i] = i
		}
		return out
	}
	every := map[int]bool{}
	add := func(from, to int) {
		for i := max(from, 0); i < min(to, len(data)); i++ {
			every[i] = true
		}
	}
	first := bytes.Index(data, []byte{0xff, 0xda})
	add(0, first+20)
	add(len(data)-80, len(data))
	for i := first + 2; i+1 < len(data); i++ {
		if data[i] == 0xff && data[i+1] != 0 {
			add(i-8, i+80)
		}
	}
	for i := 0; i < len(data); i += len(data)/600 + 1 {
		every[i] = true
	}
	return slices.Sorted(maps.Keys(every))
}

// TestTruncated: prefixes of the seeds (see cuts) fail or decode exactly as with image/jpeg,
// and never panic.
func TestTruncated(t *testing.T) {
	t.Parallel() // pure decoding: these run beside each other
	seeds := testSeeds(t)
	for s, name := range sortedKeys(seeds) {
		data := seeds[name]
		for k, n := range cuts(data) {
			if sampled(k, s) {
				checkSame(t, fmt.Sprintf("%s[:%d]", name, n), data[:n])
			}
		}
	}
}

// raceStride: under -race the sweeps take every raceStride-th case (see raceBuild).
const raceStride = 8

// sampled says whether a sweep takes its case k of seed s: every case, or under -race every
// raceStride-th, starting at a place that moves with the seed so that the seeds between them
// still cut, break and change every kind of place.
func sampled(k, s int) bool { return !raceBuild || (k+s)%raceStride == 0 }

// TestCorrupted: seeds with bytes changed, inserted or removed (markers, stuffing, zeros,
// random bytes, in the headers and the entropy-coded data) fail or decode exactly as with
// image/jpeg, and never panic.
func TestCorrupted(t *testing.T) {
	t.Parallel() // pure decoding: these run beside each other
	seeds := testSeeds(t)
	r := rand.New(rand.NewPCG(1, 2))
	mutations := 400
	if testing.Short() || raceBuild {
		mutations = 60
	}
	ok, failed := 0, 0
	for _, name := range sortedKeys(seeds) {
		data := seeds[name]
		sos := bytes.LastIndex(data, []byte{0xff, 0xda})
		for i := 0; i < mutations; i++ {
			b := bytes.Clone(data)
			// Mostly in the scan data, some anywhere.
			pos := r.IntN(len(b) - 2)
			if i%4 != 0 && sos > 0 {
				pos = sos + r.IntN(len(b)-sos-2)
			}
			var what string
			switch i % 8 {
			case 0:
				b[pos] = byte(r.IntN(256))
				what = "byte"
			case 1:
				b[pos] ^= 1 << r.IntN(8)
				what = "bit"
			case 2:
				b = slices.Insert(b, pos, 0xff, byte(0xd0+r.IntN(8)))
				what = "rst"
			case 3:
				b = slices.Insert(b, pos, 0xff)
				what = "ff"
			case 4:
				b = slices.Delete(b, pos, pos+1+r.IntN(3))
				what = "delete"
			case 5:
				b[pos] = 0xff
				what = "set ff"
			case 6:
				b = slices.Insert(b, pos, 0xff, 0x00, 0xff, 0x00)
				what = "stuffing"
			case 7:
				for k := 0; k < 4; k++ {
					b[r.IntN(len(b))] = byte(r.IntN(256))
				}
				what = "four bytes"
			}
			if checkSame(t, fmt.Sprintf("%s %s at %d (#%d)", name, what, pos, i), b) {
				ok++
			} else {
				failed++
			}
		}
	}
	t.Logf("%d mutants decoded, %d failed (or differed: see errors above)", ok, failed)
}

// TestExtraneousAndRestarts are image/jpeg's own tests of what it tolerates, run on both
// decoders: junk between the scan and EOI, and junk or wrong markers at a restart marker.
func TestExtraneousAndRestarts(t *testing.T) {
	enc := encode(t, photoImage(1, 1, 1, 0), 75)
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 300; i++ {
		var b bytes.Buffer
		b.Write(enc[:len(enc)-2])
		for n := r.IntN(10); n > 0; n-- {
			if x := byte(r.IntN(256)); x != 0xff {
				b.WriteByte(x)
			} else {
				b.WriteString("\xff\x00")
			}
		}
		b.WriteString("\xff\xd9")
		checkSame(t, fmt.Sprintf("extraneous #%d", i), b.Bytes())
	}

	data, err := os.ReadFile("testdata/video-001.restart2.jpeg")
	if err != nil {
		t.Fatal(err)
	}
	if data[2816] != 0xff || data[2817] != 0xd1 {
		t.Fatal("video-001.restart2.jpeg: no FF D1 at 2816")
	}
	for _, infix := range []string{"", "\x00", "\x61", "\x61\x62\x63\xff\x00\x64", "\xff", "\xff\x00",
		"\xff\xff\xff\x00\xff\x00\x00\xff\xff\xff", "\xff\x03", "\xff\xd5", "\xff\xff\xd5", "\xff\xd9", "\x00\xff"} {
		b := slices.Concat(data[:2816], []byte(infix), data[2816:])
		checkSame(t, fmt.Sprintf("restart infix %q", infix), b)
		// The same before the data's last byte ahead of the marker, where the bits run out.
		b = slices.Concat(data[:2815], []byte(infix), data[2815:])
		checkSame(t, fmt.Sprintf("restart infix %q one byte early", infix), b)
	}
}

// eofReader gives data, then dataEOF with io.EOF on the read that returns its last bytes.
type eofReader struct {
	data, dataEOF []byte
}

func (r *eofReader) Read(b []byte) (n int, err error) {
	if len(r.data) > 0 {
		n = copy(b, r.data)
		r.data = r.data[n:]
		return n, nil
	}
	n = copy(b, r.dataEOF)
	r.dataEOF = r.dataEOF[n:]
	if len(r.dataEOF) == 0 {
		err = io.EOF
	}
	return n, err
}

var errBroken = errors.New("broken reader")

// brokenReader gives the first n bytes of data, then fails with errBroken.
type brokenReader struct {
	data []byte
	n    int
}

func (r *brokenReader) Read(b []byte) (int, error) {
	if r.n <= 0 {
		return 0, errBroken
	}
	k := copy(b[:min(len(b), r.n)], r.data)
	r.data, r.n = r.data[k:], r.n-k
	return k, nil
}

// TestReaders decodes through readers that return one byte at a time, half of what is asked,
// data and io.EOF together, and an error other than io.EOF part-way through: the buffer refills
// and end-of-input paths must behave as image/jpeg's.
func TestReaders(t *testing.T) {
	t.Parallel() // pure decoding: these run beside each other
	seeds := testSeeds(t)
	readers := map[string]func([]byte) io.Reader{
		"onebyte": func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) },
		"half":    func(b []byte) io.Reader { return iotest.HalfReader(bytes.NewReader(b)) },
		"dataerr": func(b []byte) io.Reader { return iotest.DataErrReader(bytes.NewReader(b)) },
	}
	for s, name := range sortedKeys(seeds) {
		data := seeds[name]
		for rn, nr := range readers {
			if !checkSameReader(t, name+" "+rn, data, nr) {
				t.Errorf("%s %s: did not decode", name, rn)
			}
		}
		for i := 0; i < len(data); i = i*2 + 1 {
			checkSameReader(t, fmt.Sprintf("%s eof at %d", name, i), data, func(b []byte) io.Reader {
				return &eofReader{b[:len(b)-i], b[len(b)-i:]}
			})
		}
		for k, n := range cuts(data) {
			if !sampled(k, s) {
				continue
			}
			checkSameReader(t, fmt.Sprintf("%s broken at %d", name, n), data, func(b []byte) io.Reader {
				return &brokenReader{data: b, n: n}
			})
			if k%5 == 0 {
				checkSameReader(t, fmt.Sprintf("%s broken at %d, one byte at a time", name, n), data, func(b []byte) io.Reader {
					return iotest.OneByteReader(&brokenReader{data: b, n: n})
				})
			}
		}
	}
}

// TestIDCTDC: idctDC is what idct gives for a block with only a DC coefficient, for every
// value a dequantized DC can take and the int32 extremes corrupt data can make.
func TestIDCTDC(t *testing.T) {
	check := func(x int32) {
		var b block
		b[0] = x
		idct(&b)
		for i, v := range b {
			if v != idctDC(x) {
				t.Fatalf("idct of DC %d: sample %d is %d, idctDC says %d", x, i, v, idctDC(x))
			}
		}
	}
	for x := int32(-1 << 16); x <= 1<<16; x++ {
		check(x)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 100000 {
		check(int32(r.Uint32()))
	}
	for _, x := range []int32{-1 << 31, 1<<31 - 1, -1<<31 + 1, 1 << 30, -1 << 30} {
		check(x)
	}
}

// TestLevelShift: levelShift is the standard library's clip for every value idct can give.
func TestLevelShift(t *testing.T) {
	for c := int32(-1 << 13); c < 1<<13; c++ {
		want := c + 128
		if c < -128 {
			want = 0
		} else if c > 127 {
			want = 255
		}
		if got := levelShift(c); int32(got) != want {
			t.Fatalf("levelShift(%d) = %d, want %d", c, got, want)
		}
	}
}

// TestTablesMatchSlowPath: for the standard tables and for malformed ones (over-subscribed,
// all codes long, one code), every entry of lut is what image/jpeg's 8-bit table and slow
// path give; checked by decoding bit patterns with a table that has only the slow path.
func TestTablesMatchSlowPath(t *testing.T) {
	t.Parallel() // pure decoding: these run beside each other
	counts := [][16]byte{
		{0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0},       // standard luminance DC
		{0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7d},    // standard luminance AC
		{3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},       // over-subscribed at length 1
		{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 200},     // all 16 bits long
		{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},       // one code
		{0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 7, 0, 0, 0, 0, 0},       // 10 and 11 bits
		{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2},       // over-subscribed everywhere
		{0, 0, 0, 0, 0, 0, 0, 255, 0, 0, 0, 0, 0, 0, 0, 0},     // 255 codes of 8 bits
		{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},       // empty (rejected)
		{0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},       // a long tail
		{0, 1, 1, 1, 1, 1, 1, 1, 1, 255 - 9, 0, 0, 0, 0, 0, 0}, // over-subscribed at 10
		{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},       // a single 16-bit code
		{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff},    // 255 codes of 16 bits
		{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 200, 0},     // 200 codes of 15 bits
		{0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0},       // 9 bits only
		{0, 0, 0, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0},    // 64 codes of 10 bits
		{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x40, 0x40, 0, 0, 0, 0}, // 11 and 12 bits
		{0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0},       // 8 bits only
	}
	r := rand.New(rand.NewPCG(7, 8))
	for ci, c := range counts {
		total := 0
		for _, v := range c {
			total += int(v)
		}
		if total == 0 || total > 256 {
			continue
		}
		vals := make([]byte, total)
		for i := range vals {
			vals[i] = byte(r.IntN(256))
		}
		// A JPEG stream is not needed: processDHT reads from the decoder's buffer.
		seg := append([]byte{0x10}, c[:]...)
		seg = append(seg, vals...)
		var d decoder
		d.r = bytes.NewReader(seg)
		if err := d.processDHT(len(seg)); err != nil {
			t.Fatalf("table %d: %v", ci, err)
		}
		h := &d.huff[1][0]
		lut8 := stdLUT(h)
		// Every pattern of lutBits bits followed by ones and by zeros decodes, through the
		// fast tables, to what the bit-by-bit path (with the standard 8-bit table first)
		// gives.
		for p := 0; p < 1<<lutBits; p++ {
			for _, tail := range []uint64{0, ^uint64(0) >> lutBits} {
				a := uint64(p)<<(64-lutBits) | tail
				gv, gerr, gn := decodeWith(h, a, nil)
				wv, werr, wn := decodeWith(h, a, lut8)
				if gv != wv || fmt.Sprint(gerr) != fmt.Sprint(werr) || gn != wn {
					t.Fatalf("table %d, pattern %0*b: got %d %v (%d bits), want %d %v (%d bits)",
						ci, lutBits, p, gv, gerr, gn, wv, werr, wn)
				}
			}
		}
	}
}

// decodeWith decodes one symbol from a (64 bits) with h: with lut8 nil, through this
// package's tables; else as image/jpeg does, with its 8-bit table lut8 and then bit by bit.
func decodeWith(h *huffman, a uint64, lut8 *[256]uint16) (uint8, error, int) {
	if lut8 == nil {
		d := &decoder{}
		d.bits.a, d.bits.n = a, 63
		d.bits.end = errShortHuffmanData
		v, err := d.decodeHuffman(h)
		return v, err, 63 - int(d.bits.n)
	}
	if v := lut8[a>>56]; v != 0 {
		return uint8(v >> 8), nil, int(v&0xff) - 1
	}
	code := int32(0)
	for i := 0; i < 16; i++ {
		code |= int32(a>>(63-i)) & 1
		if code <= h.maxCodes[i] {
			return h.vals[h.valsIndices[i]+code-h.minCodes[i]], nil, i + 1
		}
		code <<= 1
	}
	return 0, FormatError("bad Huffman code"), 16
}

// stdLUT is image/jpeg's 8-bit table for h, made as its processDHT does from the code counts
// (with the same uint8 wrap-around for over-subscribed tables).
func stdLUT(h *huffman) *[256]uint16 {
	var lut8 [256]uint16
	var x, code uint32
	var nCodes [16]int32
	for i := range nCodes {
		if h.maxCodes[i] >= 0 {
			nCodes[i] = h.maxCodes[i] - h.minCodes[i] + 1
		}
	}
	for i := uint32(0); i < 8; i++ {
		code <<= 1
		for j := int32(0); j < nCodes[i]; j++ {
			base := uint8(code << (7 - i))
			v := uint16(h.vals[x])<<8 | uint16(2+i)
			for k := uint8(0); k < 1<<(7-i); k++ {
				lut8[base|k] = v
			}
			code++
			x++
		}
	}
	return &lut8
}

// TestScanParametersChanged rewrites the spectral selection and successive approximation
// bytes (Ss, Se, Ah/Al) and the table selectors of every scan of progressive and sequential
// files, so that the data no longer fits the scan: runs past the band's end, refinements of
// coefficients never sent, tables never defined. Both decoders must agree.
func TestScanParametersChanged(t *testing.T) {
	t.Parallel() // pure decoding: these run beside each other
	names := []string{"testdata/video-001.q50.420.progressive.jpeg", "testdata/video-001.q50.444.progressive.jpeg",
		"testdata/video-005.gray.q50.progressive.jpeg", "testdata/video-001.separate.dc.progression.progressive.jpeg",
		"testdata/video-001.restart2.jpeg"}
	r := rand.New(rand.NewPCG(9, 10))
	decoded := 0
	changes := 24 // six of each kind
	if raceBuild {
		changes = 8
	}
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+4 < len(data); i++ {
			if data[i] != 0xff || data[i+1] != 0xda {
				continue
			}
			n := int(data[i+2])<<8 | int(data[i+3]) // the segment's length, with its 2 bytes
			end := i + 2 + n                        // Ss, Se, Ah/Al are the last 3 bytes
			if end > len(data) || n < 6 {
				continue
			}
			for k := 0; k < changes; k++ {
				b := bytes.Clone(data)
				switch k % 4 {
				case 0: // Se smaller
					b[end-2] = byte(r.IntN(int(b[end-2]) + 1))
				case 1: // Ss and Se anywhere in order
					lo := byte(r.IntN(64))
					b[end-3], b[end-2] = lo, lo+byte(r.IntN(64-int(lo)))
				case 2: // Ah/Al
					b[end-1] = byte(r.IntN(4))<<4 | byte(r.IntN(4))
				case 3: // table selectors
					b[i+6] = byte(r.IntN(4))<<4 | byte(r.IntN(4))
				}
				if checkSame(t, fmt.Sprintf("%s SOS at %d, change %d", name, i, k), b) {
					decoded++
				}
			}
		}
	}
	t.Logf("%d changed files decoded", decoded)
}

// TestFinishSegment: after a segment, whatever was read ahead and however the reader hands
// out bytes, the input is left ceil(bits consumed / 8) data bytes after the segment's start,
// a stuffed 0xff counting two bytes: where image/jpeg's lazy reading leaves it.
func TestFinishSegment(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for iter := 0; iter < 3000; iter++ {
		// A segment of random data bytes, many of them 0xff, then a marker.
		var raw []byte
		var rawEnd []int // rawEnd[k] is the raw offset after data byte k
		for k := r.IntN(60); k > 0; k-- {
			if r.IntN(4) == 0 {
				raw = append(raw, 0xff, 0x00)
			} else {
				raw = append(raw, byte(r.IntN(255)))
			}
			rawEnd = append(rawEnd, len(raw))
		}
		raw = append(raw, 0xff, 0xd9, 1, 2, 3)
		var d decoder
		if r.IntN(2) == 0 {
			d.r = iotest.OneByteReader(bytes.NewReader(raw))
		} else {
			d.r = bytes.NewReader(raw)
		}
		consumed := 0
		for {
			want := int32(1 + r.IntN(16))
			if _, err := d.decodeBits(want); err != nil {
				break
			}
			consumed += int(want)
		}
		d.finishSegment()
		wantPos := 0
		if k := (consumed + 7) / 8; k > 0 {
			wantPos = rawEnd[k-1]
		}
		// What the decoder reads next must be the bytes from there on.
		next := make([]byte, len(raw)-wantPos)
		if err := d.readFull(next); err != nil || !bytes.Equal(next, raw[wantPos:]) {
			t.Fatalf("iteration %d: %d data bits consumed of %x: then read %x, %v; want %x",
				iter, consumed, raw, next, err, raw[wantPos:])
		}
		if err := d.readFull(next[:1]); err != io.ErrUnexpectedEOF {
			t.Fatalf("iteration %d: read past the end: %v", iter, err)
		}
	}
}

// imageMagick finds ImageMagick's convert on PATH: the first convert whose -version says it is
// ImageMagick (a convert that is something else, such as a stand-in script, is passed over). Not
// found: the test is skipped, or fails under CI=true, where .ci/run installs it.
func imageMagick(t *testing.T) string {
	t.Helper()
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		p := filepath.Join(dir, "convert")
		if _, err := os.Stat(p); err != nil {
			continue
		}
		out, _ := exec.Command(p, "-version").Output()
		if strings.HasPrefix(string(out), "Version: ImageMagick ") {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("ImageMagick's convert is not installed (.ci/run installs the Debian imagemagick package)")
	}
	t.Skip("ImageMagick's convert is not installed")
	return ""
}
