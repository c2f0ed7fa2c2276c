package shrink_test

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/shrink"
	"github.com/attachctl/attachctl/sniff"
)

// Record makes an image fit a model's limits: a 3000x600 screenshot comes out 1000x200, written
// into OutDir under a name made of the source's BLAKE3, and the record keeps where it came from.
func ExampleRecord() {
	dir, err := os.MkdirTemp("", "shrink-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	img := image.NewRGBA(image.Rect(0, 0, 3000, 600))
	for y := 0; y < 600; y++ {
		for x := 0; x < 3000; x++ {
			img.Set(x, y, color.RGBA{uint8(x / 12), uint8(y / 3), 200, 255})
		}
	}
	src := filepath.Join(dir, "wide.png")
	f, err := os.Create(src)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := png.Encode(f, img); err != nil {
		fmt.Println(err)
		return
	}
	if err := f.Close(); err != nil {
		fmt.Println(err)
		return
	}

	rec := &manifest.Record{Path: src}
	if err := sniff.Fill(rec, sniff.Options{}); err != nil { // shrink acts on sniffed records
		fmt.Println(err)
		return
	}
	opts := shrink.Options{MaxEdge: 1000, OutDir: filepath.Join(dir, "shrunk")}
	if err := shrink.Record(rec, opts); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rec.Shrink.Action, rec.Width, rec.Height, rec.Mime)
	fmt.Println(rec.Shrink.From.Width, rec.Shrink.From.Height, filepath.Dir(rec.Path) == opts.OutDir)
	// Output:
	// resized 1000 200 image/png
	// 3000 600 true
}
