package shrink

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkPhoto shrinks a 12 MP photo-like JPEG to 2000 px, from the bytes to the written file
// (nothing reused). SHRINK_BENCH_PHOTO names another JPEG to use.
func BenchmarkPhoto(b *testing.B) {
	var data []byte
	if p := os.Getenv("SHRINK_BENCH_PHOTO"); p != "" {
		var err error
		if data, err = os.ReadFile(p); err != nil {
			b.Fatal(err)
		}
	} else {
		data = encodeJPEG(b, photo(4032, 3024, 1), 92)
	}
	dir := b.TempDir()
	rec0 := record(b, dir, "photo.jpg", data)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := range b.N {
		rec := *rec0
		out := filepath.Join(dir, "out", string(rune('a'+i%26)), string(rune('a'+i/26%26)))
		if err := Record(&rec, Options{OutDir: out}); err != nil || rec.Shrink.Action != Resized {
			b.Fatal(err, rec.Shrink)
		}
	}
}
