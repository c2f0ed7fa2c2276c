package shrink

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/shrink/internal/heif"
)

// lying returns testdata's 4000x3000 HEIC or AVIF with every ispe box patched to say 64x48: a
// header that promises 3,072 pixels over an image of 12 million.
func lying(t testing.TB, format string) []byte { return lyingAs(t, format, 4000, 3000) }

// lyingAs is testdata's w x h gradient HEIC or AVIF with every ispe box patched to say 64x48.
func lyingAs(t testing.TB, format string, w, h uint32) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", fmt.Sprintf("gradient-%dx%d.%s", w, h, format)))
	if err != nil {
		t.Fatal(err)
	}
	var honest, lie [12]byte // version and flags, width, height
	binary.BigEndian.PutUint32(honest[4:], w)
	binary.BigEndian.PutUint32(honest[8:], h)
	binary.BigEndian.PutUint32(lie[4:], 64)
	binary.BigEndian.PutUint32(lie[8:], 48)
	from := append([]byte("ispe"), honest[:]...)
	n := bytes.Count(data, from)
	if n == 0 {
		t.Fatalf("no ispe of %dx%d to patch", w, h)
	}
	data = bytes.ReplaceAll(data, from, append([]byte("ispe"), lie[:]...))
	if p, ok := heifHeader(data); !ok || p.Width != 64 || p.Height != 48 || p.format != format {
		t.Fatalf("patched header %+v", p)
	}
	return data
}

// resetPeaks starts the reservation and decoder-memory peaks again from now.
func resetPeaks() {
	reserved.ResetPeak()
	heif.Memory.ResetPeak()
}

// peaks are the most reserved at once and the most the decoders' memory took at once.
func peaks() (reservedPeak, wasmPeak int64) {
	_, reservedPeak = reserved.Get()
	_, wasmPeak = heif.Memory.Get()
	return reservedPeak, wasmPeak
}

// TestLyingHeader: a HEIC and an AVIF whose ispe says 64x48 over 4000x3000 pixels reserve what
// 64x48 needs, and their decoders' memory never grows past that reservation: they stop asis
// with a one-line reason, alone under a 50 MB budget and six at once under 400 MB, and neither
// the reservations nor the decoders' memory ever passes --max-memory.
func TestLyingHeader(t *testing.T) {
	dir := t.TempDir()
	files := map[string][]byte{"heic": lying(t, "heic"), "avif": lying(t, "avif")}
	check := func(t *testing.T, rec *manifest.Record, format string) {
		t.Helper()
		s := rec.Shrink
		if s == nil || s.Action != AsIs || strings.ContainsAny(s.Reason, "\n\r") ||
			s.Reason != fmt.Sprintf("%s header says 64x48, but its decoder needed more than the %d MiB that size allows; not decoded",
				strings.ToUpper(format), wasmLimit(format, image.Config{Width: 64, Height: 48}, files[format])>>20) {
			t.Errorf("%s: shrink %+v", format, s)
		}
		if !strings.HasSuffix(rec.Path, "."+format) || rec.Name != "p."+format {
			t.Errorf("%s: record changed: %s, %s", format, rec.Path, rec.Name)
		}
	}
	budget := func(t *testing.T, maxMemory int64) {
		t.Helper()
		res, wasm := peaks()
		if res > maxMemory || wasm > res {
			t.Errorf("at most %d MiB reserved and %d MiB of decoder memory at once, over the budget of %d MiB or the reservations",
				res>>20, wasm>>20, maxMemory>>20)
		}
		if wasm < 1<<20 {
			t.Errorf("decoder memory peak %d: nothing was decoded", wasm)
		}
	}
	for _, format := range []string{"heic", "avif"} {
		t.Run(format+" alone", func(t *testing.T) {
			const maxMemory = 50_000_000
			rec := record(t, filepath.Join(dir), "p."+format, files[format])
			resetPeaks()
			if err := Record(rec, Options{MaxMemory: maxMemory, OutDir: filepath.Join(dir, "out")}); err != nil {
				t.Fatal(err)
			}
			check(t, rec, format)
			budget(t, maxMemory)
			if _, wasm := peaks(); wasm > wasmLimit(format, image.Config{Width: 64, Height: 48}, files[format]) {
				t.Errorf("decoder memory %d MiB, over its part of the reservation", wasm>>20)
			}
		})
	}
	// A smaller lie, 640x480 pixels, fits the decoder's memory: libheif traps on it (its one
	// line is the reason), libavif crops the image to its ispe; neither passes the limit.
	t.Run("within the limit", func(t *testing.T) {
		for _, format := range []string{"heic", "avif"} {
			data := lyingAs(t, format, 640, 480)
			rec := record(t, t.TempDir(), "s."+format, data)
			resetPeaks()
			if err := Record(rec, Options{MaxMemory: 50_000_000, OutDir: filepath.Join(dir, "out")}); err != nil {
				t.Fatal(err)
			}
			s := rec.Shrink
			switch {
			case format == "heic" && (s.Action != AsIs || strings.ContainsAny(s.Reason, "\n\r") ||
				!strings.HasPrefix(s.Reason, "undecodable: heic: the decoder stopped: wasm error: ")):
				t.Errorf("heic: shrink %+v", s)
			case format == "avif" && (s.Action != Reencoded || rec.Width != 64 || rec.Height != 48):
				t.Errorf("avif: shrink %+v, %dx%d", s, rec.Width, rec.Height)
			}
			if _, wasm := peaks(); wasm > wasmLimit(format, image.Config{Width: 64, Height: 48}, data) {
				t.Errorf("%s: decoder memory %d MiB, over its part of the reservation", format, wasm>>20)
			}
		}
	})
	t.Run("six at once", func(t *testing.T) {
		const maxMemory = 400_000_000
		resetPeaks()
		var wg sync.WaitGroup
		for i := range 6 {
			format := []string{"heic", "avif"}[i%2]
			sub := filepath.Join(dir, fmt.Sprint(i))
			if err := os.Mkdir(sub, 0o700); err != nil {
				t.Fatal(err)
			}
			rec := record(t, sub, "p."+format, files[format])
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := Record(rec, Options{MaxMemory: maxMemory, OutDir: filepath.Join(dir, "out")}); err != nil {
					t.Error(err)
				}
				check(t, rec, format)
			}()
		}
		wg.Wait()
		budget(t, maxMemory)
	})
}
