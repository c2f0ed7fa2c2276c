package acp

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"github.com/zeebo/blake3"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/sniff"
)

// Pieces of the streamed output: inline data is read and encoded a chunk at a time (a multiple of
// 3 bytes, so that only the last chunk of a file is padded) into one output buffer.
const (
	streamChunk  = 48 << 10
	streamBuffer = 256 << 10
)

// WriteTo writes the resolved document to w: compact JSON and a newline, the params or the
// JSON-RPC request with resolved params when the input was a request; Size bytes in all.
//
// The output is never held whole in memory: each inline file is opened again as it is written,
// base64-encoded a chunk at a time, so a prompt of many megabytes costs a few hundred KiB of
// memory. The uploads are marked used (by Resolve) before anything is written, so a sweep leaves
// them alone. Resolve has checked every inline file (verify.go); if one is no longer the one it
// checked (changed in place since, which a store itself never does), WriteTo stops with an error
// after writing part of the document, and the caller must then not use what it wrote.
func (res *Resolution) WriteTo(w io.Writer) (int64, error) {
	st := &streamer{w: w, buf: make([]byte, 0, streamBuffer)}
	var chunk []byte
	st.put(res.head)
	st.put([]byte{'['})
	wrote := false
	for i, b := range res.blocks {
		r := res.refs[i]
		if !emitted(r) {
			continue
		}
		if wrote {
			st.put([]byte{','})
		}
		wrote = true
		switch {
		case r == nil:
			st.put(b.marshal()) // passes through
		case r.mode == inlineImage || r.mode == inlineAudio:
			st.put(nameBlock(r).marshal()) // what the model reads of its name (names.go)
			st.put([]byte{','})
			pre, post := r.out.around("data")
			st.put(pre)
			if chunk == nil {
				chunk = make([]byte, streamChunk)
			}
			if err := streamBase64(res.u, st, r, chunk); err != nil {
				if st.err != nil {
					return st.n, st.err // w failed
				}
				st.flush()
				return st.n, atBlock(res.inputBlock(i), err)
			}
			st.put(post)
		case r.mode == docText: // its text escaped into the output a piece at a time
			d := r.doc
			st.put(d.pre)
			docPieces(r, d.sent, d.cutLen, func(s string) {
				st.buf = appendJSONEscaped(st.room(len(s)+len(s)/8+6), s)
			})
			st.put(d.post)
		default:
			st.put(r.out.marshal())
		}
		if st.err != nil {
			return st.n, st.err
		}
	}
	if res.ctx != nil {
		if wrote {
			st.put([]byte{','})
		}
		st.put(res.ctx)
	}
	st.put([]byte{']'})
	st.put(res.tail)
	st.put([]byte{'\n'})
	st.flush()
	if st.err == nil && st.n != res.Size { // cannot happen: plan counted every byte
		st.err = fmt.Errorf("resolve: wrote %d bytes, planned %d", st.n, res.Size)
	}
	return st.n, st.err
}

// Bytes returns the whole resolved document (see WriteTo).
func (res *Resolution) Bytes() ([]byte, error) {
	var b bytes.Buffer
	b.Grow(int(res.Size))
	_, err := res.WriteTo(&b)
	return b.Bytes(), err
}

// streamBase64 writes the standard base64 of the reference's finished upload to st (nil: nothing
// is written, the file is only checked), read in chunks, and checks that it is the file examine
// saw: the same size and type, and the bytes the store recorded when it was finished (their BLAKE3, hashed in the same pass: an original changed in place is
// refused rather than sent to the agent as the upload).
func streamBase64(u Uploads, st *streamer, r *ref, chunk []byte) error {
	f, err := openInline(u, r)
	if err != nil {
		e := fault.AsError(err, fault.UploadUnreadable)
		return fault.Errorf(e.Code, "upload %s: %s changed while it was resolved: %s", r.id, r.label(), e.Message)
	}
	defer f.Close()
	size, mime, sum := r.dataSize(), r.dataMime(), r.dataBlake3()
	if f.Size != size {
		return changed(r)
	}
	fi := statOf(f)
	// Writing a file verifyInline has just hashed, still the same file (inode, size and time):
	// its bytes are not hashed twice. A finished upload is read-only and read through the guarded
	// open; a file that is not the one checked is hashed again as it is written.
	hash := st == nil || !sameChecked(r.checked, fi)
	h := blake3.New()
	for left := size; left > 0; {
		c := chunk[:min(left, int64(len(chunk)))]
		if _, err := io.ReadFull(f, c); err != nil {
			return changed(r)
		}
		if left == size {
			head := c[:min(len(c), headSize)]
			if got, _ := sniff.Content(head, int64(len(head)) == size); got != mime {
				return changed(r)
			}
		}
		if hash {
			h.Write(c)
		}
		if st == nil { // verifyInline: the check alone
			left -= int64(len(c))
			continue
		}
		st.buf = appendBase64(st.room(int(b64len(int64(len(c))))), c)
		if st.err != nil {
			return st.err
		}
		left -= int64(len(c))
	}
	if n, _ := f.Read(chunk[:1]); n != 0 { // longer than it was
		return changed(r)
	}
	if !hash {
		return nil
	}
	if got := hex.EncodeToString(h.Sum(nil)); sum != "" && got != sum {
		if r.fitted != nil {
			return fault.Errorf(fault.UploadUnreadable, "upload %s: %s: its copy shrunk to fit, %s, changed while it was resolved (it hashes to %s, not %s)", r.id, r.label(), r.fitted.path, got, sum)
		}
		return fault.Errorf(fault.VerifyMismatch, "upload %s: %s no longer matches the BLAKE3 recorded when it was finished (it hashes to %s, not %s); verify the store", r.id, r.label(), got, sum)
	}
	if st == nil {
		r.checked = fi // verifyInline: this file's bytes are the ones recorded
	}
	return nil
}

// statOf is what the open file says of itself, nil where it cannot say (object storage).
func statOf(f *Upload) os.FileInfo {
	if s, ok := f.ReadCloser.(interface{ Stat() (os.FileInfo, error) }); ok {
		if fi, err := s.Stat(); err == nil {
			return fi
		}
	}
	return nil
}

// sameChecked reports whether fi is the file that was checked, unchanged since: the same file,
// size, mode and modification time. Writing into a finished upload (0400) takes a chmod and
// moves its time; what this does not see is someone who puts both back within the moment
// between the check and the write, which only a deliberate writer into the store would do.
func sameChecked(checked, fi os.FileInfo) bool {
	return checked != nil && fi != nil && os.SameFile(checked, fi) && fi.Size() == checked.Size() &&
		fi.Mode() == checked.Mode() && fi.ModTime().Equal(checked.ModTime())
}

// streamer writes the output through one buffer, keeping the first write error.
type streamer struct {
	w   io.Writer
	buf []byte
	n   int64
	err error
}

// room flushes the buffer if n more bytes would not fit, and returns it for appending.
func (st *streamer) room(n int) []byte {
	if len(st.buf)+n > cap(st.buf) {
		st.flush()
	}
	return st.buf
}

func (st *streamer) put(p []byte) { st.buf = append(st.room(len(p)), p...) }

func (st *streamer) flush() {
	if st.err == nil && len(st.buf) > 0 {
		var m int
		m, st.err = st.w.Write(st.buf)
		st.n += int64(m)
	}
	st.buf = st.buf[:0]
}

// openInline opens what an inline block's data is read from: the work folder's copy when this
// run checked it (made it, or hashed it intact) and it is still that file (same inode, size and
// mtime), which spares a store behind a network a second fetch of every inline file; otherwise
// the store's upload.
func openInline(u Uploads, r *ref) (*Upload, error) {
	if r.fitted != nil {
		return openFitted(r)
	}
	if r.of != nil { // a document's page, rendered into the cache
		return openDerived(r.path, r.size, r.blake3, "its page rendered")
	}
	if r.parent != nil { // an image inside a folder upload: through the store's guarded open
		rc, err := r.parent.folder.Open(r.rel)
		if err != nil {
			return nil, err
		}
		return &Upload{ReadCloser: rc, Size: r.size, Blake3: r.blake3}, nil
	}
	if r.copyInfo != nil {
		if fi, err := os.Lstat(r.link); err == nil && os.SameFile(fi, r.copyInfo) &&
			fi.Size() == r.size && fi.ModTime().Equal(r.copyInfo.ModTime()) {
			if f, err := os.Open(r.link); err == nil {
				if st, err := f.Stat(); err == nil && os.SameFile(st, fi) {
					return &Upload{ReadCloser: f, Size: st.Size(), Blake3: r.blake3, Path: r.link}, nil
				}
				f.Close()
			}
		}
	}
	return u.Open(r.id, r.name)
}
