package sniff

import (
	"bytes"
	"image"
	"image/color/palette"
	"image/gif"
	"image/png"
	"os"
	"testing"
)

// Animated tells an animated GIF, APNG or WebP from a still one by the header.
func TestAnimated(t *testing.T) {
	frame := func() *image.Paletted {
		return image.NewPaletted(image.Rect(0, 0, 4, 4), palette.Plan9)
	}
	var still, twoFrames, looping bytes.Buffer
	gif.EncodeAll(&still, &gif.GIF{Image: []*image.Paletted{frame()}, Delay: []int{0}})
	gif.EncodeAll(&twoFrames, &gif.GIF{Image: []*image.Paletted{frame(), frame()}, Delay: []int{10, 10}, LoopCount: -1})
	gif.EncodeAll(&looping, &gif.GIF{Image: []*image.Paletted{frame(), frame()}, Delay: []int{10, 10}})
	var pngBuf bytes.Buffer
	png.Encode(&pngBuf, frame())
	p := pngBuf.Bytes()
	// An APNG: the still PNG with an acTL chunk after IHDR (8 + 25 bytes).
	apng := append(append(append([]byte(nil), p[:33]...), []byte("\x00\x00\x00\x08acTL\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00")...), p[33:]...)
	webpAnim := []byte("RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x03\x00\x00ANIM")
	sample, err := os.ReadFile("../testdata/samples/image.gif")
	if err != nil {
		t.Fatal(err)
	}
	webp, err := os.ReadFile("../testdata/samples/image.webp")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		data []byte
		want bool
	}{
		{"still GIF", still.Bytes(), false},
		{"two frames, no loop extension", twoFrames.Bytes(), true},
		{"looping GIF", looping.Bytes(), true},
		{"looping GIF, head only", looping.Bytes()[:40], true},
		{"sample GIF", sample, false},
		{"PNG", p, false},
		{"APNG", apng, true},
		{"WebP", webp, false},
		{"animated WebP", webpAnim, true},
		{"not an image", []byte("GIF89a"), false},
	} {
		if got := Animated(c.data); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
