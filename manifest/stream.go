package manifest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/attachctl/attachctl/manifest/fault"
)

// Reader reads a manifest one record at a time. Lines may be of any length; blank lines are
// skipped; the last line may lack its newline.
type Reader struct {
	br      *bufio.Reader
	line    int
	err     error
	started bool // a line that is not blank was read
}

// NewReader returns a Reader over r.
func NewReader(r io.Reader) *Reader { return &Reader{br: bufio.NewReaderSize(r, 64<<10)} }

// Line is the number of the line last read, counting from 1.
func (r *Reader) Line() int { return r.line }

// Next returns the next record, io.EOF at the end, or a manifest.invalid *fault.Error naming the line.
// After an error every call returns it again.
func (r *Reader) Next() (*Record, error) {
	for r.err == nil {
		b, err := r.br.ReadBytes('\n')
		if len(b) == 0 && err != nil {
			r.err = err
			if err != io.EOF {
				r.err = fault.Errorf(fault.ManifestInvalid, "manifest line %d: %v", r.line+1, err)
			}
			break
		}
		r.line++
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		// Checked before decoding: the decoder would take each bad byte as U+FFFD, and the line
		// would be written back changed.
		if off := invalidAt(b); off >= 0 {
			r.err = fault.Errorf(fault.ManifestInvalid, "manifest line %d: not valid UTF-8: byte 0x%02x at offset %d", r.line, b[off], off)
			break
		}
		first := !r.started
		r.started = true
		if first {
			if what := notManifest(b); what != "" {
				r.err = fault.Errorf(fault.ManifestInvalid, "manifest line %d: %s", r.line, what)
				break
			}
		}
		rec := new(Record)
		if perr := rec.UnmarshalJSON(b); perr != nil {
			r.err = fault.Errorf(fault.ManifestInvalid, "manifest line %d: %s", r.line, describe(perr))
			break
		}
		return rec, nil // a read error after this line is met on the next call
	}
	return nil, r.err
}

// notManifest names what the first line of an input shows it to be when that is JSON but not a
// manifest, which users give by mistake: the array that rclone lsjson or jq without -c write, a
// document spread over lines (jq .), or the prompt document that `attachctl prompt` writes. ""
// when it is none of them.
func notManifest(line []byte) string {
	t := bytes.TrimSpace(line)
	switch {
	case len(t) > 0 && t[0] == '[':
		return "a JSON array: attachctl reads JSON Lines, one record a line (jq -c '.[]')"
	case len(t) == 1 && t[0] == '{':
		return "a JSON document over several lines: attachctl reads JSON Lines, one record a line (jq -c)"
	}
	var keys map[string]json.RawMessage
	if json.Unmarshal(t, &keys) != nil {
		return ""
	}
	has := func(k string) bool { _, ok := keys[k]; return ok }
	if !has("path") && (has("sessionId") && has("prompt") || has("jsonrpc") && (has("method") || has("params"))) {
		return "an ACP prompt (session/prompt JSON), not a manifest: attachctl resolve reads it"
	}
	return ""
}

// invalidAt returns the offset of the first byte of b that is not part of valid UTF-8, or -1.
func invalidAt(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	for off := 0; off < len(b); {
		r, n := utf8.DecodeRune(b[off:])
		if r == utf8.RuneError && n == 1 {
			return off
		}
		off += n
	}
	return -1
}

// describe turns a decoder error into words a user can act on.
func describe(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "not JSON: " + se.Error()
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "not JSON: unexpected end of line"
	}
	return err.Error()
}

// Writer writes records as JSON Lines. It is safe for use by one goroutine at a time.
type Writer struct {
	bw  *bufio.Writer
	mu  sync.Mutex
	buf []byte // the record being written, reused
}

// NewWriter returns a Writer on w. Call Flush when done.
func NewWriter(w io.Writer) *Writer { return &Writer{bw: bufio.NewWriterSize(w, 64<<10)} }

// Write writes one record and its newline.
func (w *Writer) Write(r *Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(r.AppendJSON(w.buf[:0]), '\n')
	_, err := w.bw.Write(w.buf)
	return err
}

// Flush writes out what is buffered.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bw.Flush()
}
