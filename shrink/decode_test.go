package shrink

import (
	"bytes"
	"image"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/attachctl/attachctl/shrink/internal/heif"
)

// TestDecodeSameAsImageDecode: decode, which sends JPEGs to internal/jpeg, gives for every
// JPEG the tests have exactly what image.Decode (image/jpeg) gives, and still decodes the
// other formats through image.Decode; a JPEG that does not decode fails in both.
func TestDecodeSameAsImageDecode(t *testing.T) {
	inputs := map[string][]byte{
		"photo.jpg":      encodeJPEG(t, photo(333, 250, 3), 85),
		"gray.jpg":       encodeJPEG(t, image.NewGray(image.Rect(0, 0, 17, 9)), 50),
		"screenshot.png": encodePNG(t, screenshot(40, 30)),
	}
	names, _ := filepath.Glob("testdata/*.jpeg")
	more, _ := filepath.Glob("testdata/*.bmp")
	for _, n := range append(names, more...) {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		inputs[n] = b
	}
	if len(inputs) < 10 {
		t.Fatalf("only %d inputs", len(inputs))
	}
	photo := inputs["photo.jpg"]
	inputs["truncated.jpg"] = photo[:len(photo)/2]
	for name, data := range inputs {
		want, _, werr := image.Decode(bytes.NewReader(data))
		got, _, gerr := decode(data, "", 0, heif.Limit{})
		if (werr == nil) != (gerr == nil) {
			t.Errorf("%s: error %v, image.Decode's %v", name, gerr, werr)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decode's image differs from image.Decode's", name)
		}
	}
}
