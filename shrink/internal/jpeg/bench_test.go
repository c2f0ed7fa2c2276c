package jpeg

import (
	"bytes"
	"image"
	stdjpeg "image/jpeg"
	"io"
	"sync"
	"testing"
)

// benchJPEG is a 4032x3024 photo-like JPEG (a 12-megapixel phone photo's size), encoded by
// image/jpeg at quality 92 (4:2:0), made once per process.
var benchJPEG = sync.OnceValue(func() []byte {
	var b bytes.Buffer
	if err := stdjpeg.Encode(&b, photoImage(4032, 3024, 42, 4), &stdjpeg.Options{Quality: 92}); err != nil {
		panic(err)
	}
	return b.Bytes()
})

// BenchmarkDecode decodes benchJPEG with image/jpeg ("std") and with this package ("new").
// MB/s counts the JPEG's bytes.
func BenchmarkDecode(b *testing.B) {
	data := benchJPEG()
	for _, dec := range []struct {
		name string
		fn   func(io.Reader) (image.Image, error)
	}{{"std", stdjpeg.Decode}, {"new", Decode}} {
		b.Run(dec.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := dec.fn(bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
