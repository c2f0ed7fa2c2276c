package main

import (
	"bytes"
	"image"
	_ "image/gif"
	_ "image/jpeg"
	_ "image/png"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	_ "golang.org/x/image/bmp"
	_ "golang.org/x/image/tiff"
	_ "golang.org/x/image/webp"
)

const committed = "../../testdata/samples"

// TestGeneratedSamplesAreCommitted: a fresh run of the generator reproduces the committed folder
// byte for byte, and the folder holds nothing else.
func TestGeneratedSamplesAreCommitted(t *testing.T) {
	files, err := Samples()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range files {
		want = append(want, f.Name)
		got, err := os.ReadFile(filepath.Join(committed, f.Name))
		if err != nil {
			t.Errorf("%s: %v (run: go run ./scripts/gensamples testdata/samples)", f.Name, err)
			continue
		}
		if !bytes.Equal(got, f.Data) {
			t.Errorf("%s: committed file differs from the generator's output (%d vs %d bytes)", f.Name, len(got), len(f.Data))
		}
	}
	entries, err := os.ReadDir(committed)
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, e := range entries {
		have = append(have, e.Name())
	}
	sort.Strings(want)
	if !slices.Equal(have, want) {
		t.Errorf("testdata/samples holds %q, the generator makes %q", have, want)
	}
}

// TestSamplesAreSmallAndDeterministic: two runs agree, every file is under 64 KiB, all under 1 MiB.
func TestSamplesAreSmallAndDeterministic(t *testing.T) {
	a, err := Samples()
	if err != nil {
		t.Fatal(err)
	}
	b, err := Samples()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for i := range a {
		if !bytes.Equal(a[i].Data, b[i].Data) {
			t.Errorf("%s: two runs differ", a[i].Name)
		}
		if len(a[i].Data) >= 64<<10 {
			t.Errorf("%s: %d bytes, want < 64 KiB", a[i].Name, len(a[i].Data))
		}
		total += len(a[i].Data)
	}
	if total >= 1<<20 {
		t.Errorf("samples total %d bytes, want < 1 MiB", total)
	}
}

// TestImagesDecode: every image sample decodes fully with the standard and x/image decoders, at
// the size the generator meant.
func TestImagesDecode(t *testing.T) {
	want := map[string][3]any{
		"image.png":    {"png", 32, 24},
		"photo.jpg":    {"jpeg", 40, 30},
		"photo-le.jpg": {"jpeg", 40, 30},
		"image.gif":    {"gif", 20, 10},
		"image.webp":   {"webp", 16, 8},
		"image.bmp":    {"bmp", 24, 12},
		"image.tiff":   {"tiff", 12, 9},
	}
	files, err := Samples()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, f := range files {
		w, ok := want[f.Name]
		if !ok {
			continue
		}
		seen++
		img, format, err := image.Decode(bytes.NewReader(f.Data))
		if err != nil {
			t.Errorf("%s: %v", f.Name, err)
			continue
		}
		b := img.Bounds()
		if format != w[0] || b.Dx() != w[1] || b.Dy() != w[2] {
			t.Errorf("%s: %s %dx%d, want %v", f.Name, format, b.Dx(), b.Dy(), w)
		}
	}
	if seen != len(want) {
		t.Errorf("decoded %d image samples, want %d", seen, len(want))
	}
}

// TestWebPColour: the hand-written VP8L bit stream decodes to the colour it was given.
func TestWebPColour(t *testing.T) {
	files, _ := Samples()
	for _, f := range files {
		if f.Name != "image.webp" {
			continue
		}
		img, _, err := image.Decode(bytes.NewReader(f.Data))
		if err != nil {
			t.Fatal(err)
		}
		r, g, b, a := img.At(5, 3).RGBA()
		if r>>8 != 0x20 || g>>8 != 0x80 || b>>8 != 0xe0 || a>>8 != 0xff {
			t.Errorf("pixel = %x %x %x %x, want 20 80 e0 ff", r>>8, g>>8, b>>8, a>>8)
		}
		return
	}
	t.Fatal("no image.webp")
}

// TestMixedIsDeterministic: the benchmark's mixed files are the same on every run, of every type
// in turn, and small.
func TestMixedIsDeterministic(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	if err := writeMixed(a, 21); err != nil {
		t.Fatal(err)
	}
	if err := writeMixed(b, 21); err != nil {
		t.Fatal(err)
	}
	exts := map[string]int{}
	err := filepath.WalkDir(a, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(a, p)
		x, _ := os.ReadFile(p)
		y, err := os.ReadFile(filepath.Join(b, rel))
		if err != nil || !bytes.Equal(x, y) {
			t.Errorf("%s differs between runs (%v)", rel, err)
		}
		if len(x) < 512 || len(x) > 80<<10 {
			t.Errorf("%s: %d bytes, want about 1 to 64 KiB", rel, len(x))
		}
		exts[filepath.Ext(p)]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []string{".png", ".jpg", ".txt", ".json", ".pdf", ".zip", ".bin"} {
		if exts[e] != 3 {
			t.Errorf("%d %s files of 21, want 3", exts[e], e)
		}
	}
}
