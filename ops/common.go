package ops

// What the store's API names on every platform; the store itself is in the files built for Unix
// (store_windows.go says why not on Windows).

import (
	"encoding/hex"
	"io"
	"os"
	"sync"
	"time"

	"github.com/attachctl/attachctl/ops/store"
	"github.com/zeebo/blake3"
)

// Names inside the store.
const (
	InternalDir = ".attachctl"
	MetaName    = store.MetaName
	UsedName    = store.UsedName
	lockName    = "lock"
	sweepLock   = "sweep.lock"
	partialDir  = "partial"
	trashDir    = "trash"
)

// Modes of everything the store creates, whatever the umask.
const (
	DirMode  os.FileMode = 0o700
	FileMode os.FileMode = 0o600
)

// NewID, ValidID and ValidName are the store's rules for ids and names (SPEC section 5).
var (
	NewID     = store.NewID
	ValidID   = store.ValidID
	ValidName = store.ValidName
)

// Meta is a finished upload's metadata, STORE/<id>/.upload.json.
type Meta = store.Info

// DefaultChunk is the largest chunk written at once unless told otherwise: 512 KiB.
const DefaultChunk = 512 << 10

// Status is what `upload status` prints.
type Status = store.Status

// MarkerWait is how long a use waits for the marker lock before it reports store.locked. A sweep
// holds it for one batch at a time, so the wait is short in practice.
var MarkerWait = 30 * time.Second

// Internal folders a sweep works in.
const (
	PartialDir = "partial"
	TrashDir   = "trash"
)

// UploadOptions tune UploadRecord.
type UploadOptions struct {
	Chunk    int           // bytes read and written at once; <= 0: DefaultChunk
	Progress func(n int64) // called with the bytes each step got through (negative on a restart)
	// Observe, when set, is shown every byte of the source read, from the first, in order, on the
	// hashing goroutine; a restart of the pass calls it with nil (forget what you saw). The upload
	// stage uses it to finish a sniff that read only the head, so that `upload FILE` reads FILE once.
	Observe func(p []byte)
	// Batch, when set, takes each upload once it is copied and built, and publishes it when the
	// batch commits (see Batch): rec.Upload names where it will be, and the upload is not
	// finished, nor safe to report, until Batch.Commit returns without error.
	Batch *Batch
}

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

// now is the clock of verify's "at"; tests may replace it.
var now = time.Now
