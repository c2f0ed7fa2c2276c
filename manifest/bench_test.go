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

// BenchmarkWrite: one sniffed record written, by the writer (append) and by encoding/json (std,
// how records were written before).
func BenchmarkWrite(b *testing.B) {
	r := &Record{Path: "shots/Café-01.png", Name: "Café-01.png", Size: 819200, HasSize: true, Mime: "image/png",
		Kind: KindImage, Width: 1920, Height: 1080, Rel: "Café-01.png"}
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		w := NewWriter(io.Discard)
		for b.Loop() {
			if err := w.Write(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("std", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := marshalStd(r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
