package store

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/zeebo/blake3"
)

// TreeCheck is what CheckTree needs of a backend to verify one finished folder upload: the
// upload's files opened one by one (through the backend's guarded open), and what the backend
// found beside them that the listing does not name.
type TreeCheck struct {
	// Open opens the file rel of the folder; upload.missing when it is not there.
	Open func(ctx context.Context, rel string) (io.ReadCloser, error)
	// ReadErr codes an error met n bytes into the file rel.
	ReadErr func(rel string, n int64, err error) error
	// Extra is what the upload holds that its listing does not (TreeAdded), and what the backend
	// found beside the folder (TreeBeside).
	Extra []TreeFault
	// Jobs is how many files are read at once (at least 1).
	Jobs int
}

var verifyBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// CheckTree is verify of the finished folder upload ti, the same on every backend: each file
// read whole and checked against its listed size and BLAKE3. A file missing, unreadable or
// changed is named, and so is each of c.Extra, in one verify.mismatch; store.unreachable (or ctx
// cancelled) stops it and is returned.
func CheckTree(ctx context.Context, ti *TreeInfo, c TreeCheck, progress func(int64)) error {
	var mu sync.Mutex
	locked := func(n int64) {
		if progress != nil {
			mu.Lock()
			progress(n)
			mu.Unlock()
		}
	}
	changed := make([]TreeFault, len(ti.Files))
	var (
		wg    sync.WaitGroup
		next  int
		first error
	)
	for range max(min(c.Jobs, len(ti.Files)), 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i, stop := next, first != nil
				next++
				mu.Unlock()
				if stop || i >= len(ti.Files) || ctx.Err() != nil {
					return
				}
				f := ti.Files[i]
				got, n, err := hashTreeFile(ctx, c, f.Rel, locked)
				switch {
				case fault.CodeOf(err) == fault.UploadMissing:
					changed[i] = TreeFault{f.Rel, TreeMissing, manifest.Quote(f.Rel) + " is missing"}
				case fault.CodeOf(err) == fault.StoreUnreachable || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				case err != nil:
					changed[i] = TreeFault{f.Rel, TreeUnreadable, fmt.Sprintf("%s: %v", manifest.Quote(f.Rel), fault.AsError(err, "").Message)}
				case n != f.Size || got != f.Blake3:
					changed[i] = TreeFault{f.Rel, TreeChanged, fmt.Sprintf("%s changed (%d bytes, BLAKE3 %s; listed %d bytes, %s)", manifest.Quote(f.Rel), n, got, f.Size, f.Blake3)}
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var m TreeMismatch
	for _, ch := range changed {
		if ch.What != 0 {
			m.Faults = append(m.Faults, ch)
		}
	}
	m.Faults = append(m.Faults, c.Extra...)
	if len(m.Faults) > 0 {
		return fault.Errorf(fault.VerifyMismatch, "upload %s: folder %s: %w", ti.ID, ti.Name, &m)
	}
	return nil
}

// TreeWhat is what verify found of one file of a folder upload.
type TreeWhat int

const (
	TreeMissing    TreeWhat = iota + 1 // listed, and not in the upload
	TreeChanged                        // read whole, and not its listed size or BLAKE3
	TreeUnreadable                     // could not be read
	TreeAdded                          // in the upload, and not listed
	TreeBeside                         // something the backend found beside the folder (Rel "")
)

// TreeFault is one thing CheckTree found wrong: the file (relative to the folder), what happened
// to it, and the words its verify.mismatch gives it.
type TreeFault struct {
	Rel  string
	What TreeWhat
	Text string
}

// TreeMismatch is the cause of CheckTree's verify.mismatch (errors.As): what was found wrong,
// file by file, in the order the message names them. A caller that shows a folder file by file
// (verify --format combined) reads this, not the message.
type TreeMismatch struct {
	Faults []TreeFault
}

// Error is the list the message gives: each fault's words, "; " between.
func (m *TreeMismatch) Error() string {
	why := make([]string, len(m.Faults))
	for i, f := range m.Faults {
		why[i] = f.Text
	}
	return strings.Join(why, "; ")
}

// hashTreeFile reads the file rel whole and returns its BLAKE3 and size.
func hashTreeFile(ctx context.Context, c TreeCheck, rel string, progress func(int64)) (string, int64, error) {
	r, err := c.Open(ctx, rel)
	if err != nil {
		return "", 0, err
	}
	defer r.Close()
	h := blake3.New()
	bp := verifyBufs.Get().(*[]byte)
	defer verifyBufs.Put(bp)
	n, err := io.CopyBuffer(h, io.TeeReader(r, progressWriter(progress)), *bp)
	if err != nil {
		return "", n, c.ReadErr(rel, n, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

type progressWriter func(int64)

func (p progressWriter) Write(b []byte) (int, error) {
	p(int64(len(b)))
	return len(b), nil
}
