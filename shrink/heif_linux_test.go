package shrink

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoSystemDecoderLoaded: with the system's libheif and libavif installed, decoding HEIC and
// AVIF still loads neither (nor libde265 or libaom): the WebAssembly decoders give the same
// output on every machine, whatever it has installed.
func TestNoSystemDecoderLoaded(t *testing.T) {
	for _, lib := range []string{"libheif.so.1", "libavif.so"} {
		out, _ := exec.Command("/sbin/ldconfig", "-p").Output()
		if !strings.Contains(string(out), lib) {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed: install libheif1 and libavif15 in .ci/run", lib)
			}
			t.Skipf("%s not installed: nothing to tell apart", lib)
		}
	}
	// One HEIC and one AVIF decoded in this process: each format has one decoder, whatever the
	// file, so decoding more of them (TestHEICUpright's and TestAVIFUpright's work, which this
	// test ran again) maps nothing more.
	dir := t.TempDir()
	for _, name := range []string{"gradient-640x480.heic", "gradient-640x480.avif"} {
		rec := shrinkFile(t, dir, filepath.Join("testdata", name), 400)
		if rec.Shrink.Action != Resized || rec.Width != 400 || rec.Height != 300 {
			t.Fatalf("%s: shrink %+v, %dx%d: not decoded", name, rec.Shrink, rec.Width, rec.Height)
		}
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	for _, lib := range []string{"libheif", "libavif", "libde265", "libaom", "libdav1d"} {
		if strings.Contains(string(maps), lib) {
			t.Errorf("%s is mapped into the process", lib)
		}
	}
	if !strings.Contains(string(maps), filepath.Base(os.Args[0])) {
		t.Fatal("/proc/self/maps does not list the test binary: the check above proves nothing")
	}
}
