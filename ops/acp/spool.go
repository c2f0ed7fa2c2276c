package acp

import (
	"io"
	"os"

	"github.com/attachctl/attachctl/manifest"
)

// The resolved document is rendered whole before its first byte reaches the caller's writer:
// every inline file is read, hashed and checked against its upload's BLAKE3 while it is encoded,
// so a prompt that turns out bad at its last inline byte has written nothing and marked nothing
// used. It is rendered into a spool, not re-read after a separate check pass: each inline file is
// read once, and nothing changed between a check and a second read can slip through. A prompt of
// up to spoolMemory bytes (links and text: nearly every prompt) stays in memory; a bigger one
// (megabytes of base64) goes on into an unlinked temporary file, so memory stays bounded at
// spoolMemory plus the stream buffer whatever --max-message allows.
const spoolMemory = 1 << 20

// spool holds the rendered document: in memory, then in a temporary file once it passes
// spoolMemory.
type spool struct {
	mem  []byte
	f    *os.File
	name string // the temporary file's name while it is still there to be removed (Close)
	n    int64
}

func (s *spool) Write(p []byte) (int, error) {
	if s.f == nil && int64(len(s.mem)+len(p)) > spoolMemory {
		f, err := os.CreateTemp("", "attachctl-resolve-*.json")
		if err != nil {
			return 0, err
		}
		s.f = f
		if os.Remove(f.Name()) != nil {
			s.name = f.Name() // a system that keeps an open file's name: removed by Close
		}
		if _, err := f.Write(s.mem); err != nil {
			return 0, err
		}
		s.mem = nil
	}
	s.n += int64(len(p))
	if s.f != nil {
		return s.f.Write(p)
	}
	s.mem = append(s.mem, p...)
	return len(p), nil
}

// writeTo copies the whole spool to w.
func (s *spool) writeTo(w io.Writer) (int64, error) {
	if s.f == nil {
		n, err := w.Write(s.mem)
		return int64(n), err
	}
	return io.CopyBuffer(w, io.NewSectionReader(s.f, 0, s.n), make([]byte, streamBuffer))
}

func (s *spool) close() {
	if s.f != nil {
		s.f.Close()
		if s.name != "" {
			os.Remove(s.name)
		}
		s.f = nil
	}
	s.mem = nil
}

// render writes the whole document into the resolution's spool; an error means no part of it
// may be used.
func (res *Resolution) render() error {
	s := &spool{}
	if _, err := res.stream(s); err != nil {
		s.close()
		if manifest.CodeOf(err) == "" {
			return manifest.Errorf(manifest.UploadUnreadable, "holding the resolved prompt in a temporary file: %v", err)
		}
		return err
	}
	res.spool = s
	return nil
}

// WriteTo writes the resolved document to w: compact JSON and a newline, the params or the
// JSON-RPC request with resolved params when the input was a request; Size bytes in all. Resolve
// has rendered it whole already (every inline file read and checked), so an error here is w's.
func (res *Resolution) WriteTo(w io.Writer) (int64, error) {
	if res.spool == nil {
		return res.stream(w)
	}
	return res.spool.writeTo(w)
}

// Close lets go of the rendered document (its temporary file, if it has one).
func (res *Resolution) Close() error {
	if res.spool != nil {
		res.spool.close()
		res.spool = nil
	}
	return nil
}
