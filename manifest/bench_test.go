package manifest

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// BenchmarkReader reads a manifest of typical sniffed records (a non-ASCII name in every tenth);
// utf8-check is the part of it that the check of each line before decoding takes.
func BenchmarkReader(b *testing.B) {
	var in bytes.Buffer
	for i := range 1000 {
		name := fmt.Sprintf("shot-%04d.png", i)
		if i%10 == 0 {
			name = fmt.Sprintf("café-日本-%04d.png", i)
		}
		fmt.Fprintf(&in, `{"path":"shots/%s","name":"%s","size":%d,"mime":"image/png","kind":"image","blake3":"%064x","width":1920,"height":1080,"ticket":"T-%d"}`+"\n",
			name, name, 800000+i, i, i)
	}
	b.Run("read", func(b *testing.B) {
		b.SetBytes(int64(in.Len()))
		for b.Loop() {
			r := NewReader(bytes.NewReader(in.Bytes()))
			for {
				if _, err := r.Next(); err == io.EOF {
					break
				} else if err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	lines := bytes.SplitAfter(in.Bytes(), []byte("\n"))
	b.Run("utf8-check", func(b *testing.B) {
		b.SetBytes(int64(in.Len()))
		for b.Loop() {
			for _, l := range lines {
				if invalidAt(l) >= 0 {
					b.Fatal("invalid")
				}
			}
		}
	})
}
