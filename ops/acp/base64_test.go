package acp

import (
	"bytes"
	"encoding/base64"
	"math/rand"
	"testing"
)

func TestAppendBase64MatchesStd(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for n := 0; n < 300; n++ {
		src := make([]byte, n)
		rng.Read(src)
		for _, prefix := range [][]byte{nil, []byte(`{"data":"`)} {
			want := base64.StdEncoding.AppendEncode(append([]byte(nil), prefix...), src)
			got := appendBase64(append([]byte(nil), prefix...), src)
			if !bytes.Equal(got, want) {
				t.Fatalf("len %d prefix %q: got %q, want %q", n, prefix, got, want)
			}
		}
	}
	big := make([]byte, 3<<20+5)
	rng.Read(big)
	if !bytes.Equal(appendBase64(nil, big), []byte(base64.StdEncoding.EncodeToString(big))) {
		t.Fatal("a 3 MiB input differs")
	}
}

func FuzzAppendBase64(f *testing.F) {
	f.Add([]byte("any carnal pleasure."), []byte("x"))
	f.Add([]byte{0xff, 0xfe, 0, 1, 2, 3, 4, 5, 6}, []byte(nil))
	f.Fuzz(func(t *testing.T, src, prefix []byte) {
		want := base64.StdEncoding.AppendEncode(append([]byte(nil), prefix...), src)
		if got := appendBase64(append([]byte(nil), prefix...), src); !bytes.Equal(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}

func BenchmarkBase64(b *testing.B) {
	src := make([]byte, 800<<10)
	rand.New(rand.NewSource(1)).Read(src)
	dst := make([]byte, 0, base64.StdEncoding.EncodedLen(len(src)))
	b.Run("std", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for i := 0; i < b.N; i++ {
			dst = base64.StdEncoding.AppendEncode(dst[:0], src)
		}
	})
	b.Run("pairs", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for i := 0; i < b.N; i++ {
			dst = appendBase64(dst[:0], src)
		}
	})
}
