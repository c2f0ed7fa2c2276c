// Package ops holds what the stages over a store share whatever the backend: BLAKE3 of a stream,
// and b3sum's line format. The stores themselves are ops/store (the seam), ops/store/internal/local and
// ops/store/internal/s3; resolve and prompt are ops/acp.
package ops

import (
	"encoding/hex"
	"io"
	"sync"

	"github.com/zeebo/blake3"
)

// hashBufSize is the read size of Hash: large enough that the hasher works on many 1 KiB chunks at
// once (zeebo/blake3 hashes 8 or 16 chunks in parallel lanes) and the read calls cost little.
const hashBufSize = 1 << 20

var hashBufs = sync.Pool{New: func() any { b := make([]byte, hashBufSize); return &b }}

// Hash returns the BLAKE3-256 of what r yields, as 64 lowercase hex digits, and the number of
// bytes read. progress, when not nil, is called with each read's byte count.
func Hash(r io.Reader, progress func(int64)) (string, int64, error) {
	bp := hashBufs.Get().(*[]byte)
	defer hashBufs.Put(bp)
	buf := *bp
	h := blake3.New()
	var n int64
	for {
		k, err := io.ReadFull(r, buf)
		if k > 0 {
			h.Write(buf[:k])
			n += int64(k)
			if progress != nil {
				progress(int64(k))
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return "", n, err
		}
	}
	var sum [32]byte
	return hex.EncodeToString(h.Sum(sum[:0])), n, nil
}
