package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/attachctl/attachctl/manifest/fault"
)

// Limits are a store's quotas (docs/operations.md, "store init"), set once by `store init` and kept
// in the store's mark, on every backend. Zero is no limit. Every command that adds to the store
// checks them before it writes a byte: a file over MaxFile is upload.tooLarge, an upload that would
// take the store past MaxBytes or MaxFiles is store.full.
type Limits struct {
	MaxFile  int64 `json:"maxFile,omitempty"`  // the largest upload, in bytes
	MaxBytes int64 `json:"maxBytes,omitempty"` // all uploads together, finished and unfinished, in bytes
	MaxFiles int64 `json:"maxFiles,omitempty"` // how many uploads, finished and unfinished
}

// String is l in words for messages: "max-file 100 B, max-files 4".
func (l Limits) String() string {
	var out []string
	if l.MaxFile > 0 {
		out = append(out, "max-file "+Bytes(l.MaxFile))
	}
	if l.MaxBytes > 0 {
		out = append(out, "max-bytes "+Bytes(l.MaxBytes))
	}
	if l.MaxFiles > 0 {
		out = append(out, fmt.Sprintf("max-files %d", l.MaxFiles))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// None reports whether l limits nothing.
func (l Limits) None() bool { return l == Limits{} }

// Usage is what a store holds, as its limits count it.
type Usage struct {
	Files int64 // uploads, finished and unfinished
	Bytes int64 // their bytes: a finished upload's size; an unfinished one's declared size, or the bytes written so far when it is larger or open
}

// UsageOf counts a listing's uploads as the limits count them.
func UsageOf(l *Listing) Usage {
	var u Usage
	for _, e := range l.Entries {
		if e.Batch {
			continue
		}
		u.Files++
		u.Bytes += e.Size
	}
	return u
}

// Mark is the store's mark: what says a location is an attachctl store, and its limits. It is
// one JSON object (the local store's), or lines of text whose first is MarkLine, whose limits are
// the line "limits {...}" and whose other lines are the backend's notes (the S3 store's, which
// notes there what it found of the server's conditional writes). A mark of an earlier version
// (other plain text) is a mark without limits. The form is read and written here, once; a backend
// keeps the bytes (Marker).
type Mark struct {
	Store  string `json:"attachctl"` // always "store"
	Limits Limits `json:"limits"`
}

// MarkLine is the first line of a mark kept as lines of text; limitsPrefix begins its limits line.
const (
	MarkLine     = "attachctl store\n"
	limitsPrefix = "limits "
)

// MarkText is the store mark for limits l, as written.
func MarkText(l Limits) []byte {
	b, _ := json.Marshal(Mark{Store: "store", Limits: l})
	return append(b, '\n')
}

// ParseMark reads a store mark: its limits; a mark of an earlier version (neither JSON nor lines
// with a limits line) has none. A mark whose limits are not of this form, or negative, is
// damaged: upload.unreadable, so that a limit is never silently dropped.
func ParseMark(where string, b []byte) (Limits, error) {
	t := strings.TrimSpace(string(b))
	if !strings.HasPrefix(t, "{") {
		line := ""
		for _, l := range strings.Split(t, "\n") {
			if strings.HasPrefix(l, limitsPrefix) {
				line = strings.TrimPrefix(l, limitsPrefix)
			}
		}
		if line == "" {
			return Limits{}, nil
		}
		t = `{"attachctl":"store","limits":` + line + `}`
	}
	var m Mark
	if err := json.Unmarshal([]byte(t), &m); err != nil || m.Store != "store" || m.Limits.MaxFile < 0 || m.Limits.MaxBytes < 0 || m.Limits.MaxFiles < 0 {
		return Limits{}, fault.Errorf(fault.UploadUnreadable, "store mark %s is damaged (want {\"attachctl\":\"store\",\"limits\":{\"maxFile\":N,\"maxBytes\":N,\"maxFiles\":N}})", where)
	}
	return m.Limits, nil
}

// MarkWith is the mark body with its limits set to l, in body's form: lines of text (MarkLine and
// the backend's notes after it) keep their notes, with a limits line when l limits anything;
// anything else (none, JSON, an earlier version's text) becomes MarkText(l).
func MarkWith(body []byte, l Limits) []byte {
	lines := strings.SplitAfter(string(body), "\n")
	if len(lines) < 2 || lines[0] != MarkLine || strings.TrimSpace(strings.Join(lines[1:], "")) == "" {
		return MarkText(l)
	}
	out := MarkLine
	if !l.None() {
		b, _ := json.Marshal(l)
		out += limitsPrefix + string(b) + "\n"
	}
	for _, line := range lines[1:] {
		if line != "" && line != MarkLine && !strings.HasPrefix(line, limitsPrefix) {
			out += strings.TrimSuffix(line, "\n") + "\n"
		}
	}
	return []byte(out)
}

// Marker is a backend's part of its mark: where it keeps the bytes. What they say and store
// init's rule are Quota's (Limits, SetLimits), the same on every backend.
type Marker interface {
	// MakeStore makes the store, or marks one of an earlier version, as an upload does: refused
	// where a store may not be made.
	MakeStore(ctx context.Context) error
	// ReadMark returns the mark's bytes (nil when there is none: a store not made yet) and the
	// version of them that ReplaceMark writes over.
	ReadMark(ctx context.Context) (body []byte, version string, err error)
	// ReplaceMark writes body over the mark read at version, whole; where the backend can tell,
	// a mark changed since is refused.
	ReplaceMark(ctx context.Context, body []byte, version string) error
}

// Admit checks one more upload of size bytes (-1: not known yet, only the count is checked)
// named name against l, with used what the store holds. The message names the limit and what is
// used.
func (l Limits) Admit(loc, name string, size int64, used Usage) error {
	if l.MaxFile > 0 && size > l.MaxFile {
		return fault.Errorf(fault.UploadTooLarge, "%s: %s is over the largest file store %s takes, %s (its max-file)",
			name, Bytes(size), loc, Bytes(l.MaxFile))
	}
	if l.MaxFiles > 0 && used.Files+1 > l.MaxFiles {
		return fault.Errorf(fault.StoreFull, "%s: store %s is full: it holds %d uploads, its max-files is %d",
			name, loc, used.Files, l.MaxFiles)
	}
	if l.MaxBytes > 0 && size > 0 && used.Bytes+size > l.MaxBytes {
		return fault.Errorf(fault.StoreFull, "%s: store %s is full: %s more would pass its max-bytes %s (%s used in %d uploads)",
			name, loc, Bytes(size), Bytes(l.MaxBytes), Bytes(used.Bytes), used.Files)
	}
	return nil
}

// AdmitBytes checks that an unfinished upload named name may grow from offset to end bytes: not
// past MaxFile (upload.tooLarge), and not past MaxBytes with used, which counts the upload at
// offset bytes (store.full).
func (l Limits) AdmitBytes(loc, name string, offset, end int64, used Usage) error {
	if l.MaxFile > 0 && end > l.MaxFile {
		return fault.Errorf(fault.UploadTooLarge, "%s: %s would be over the largest file store %s takes, %s (its max-file); none of the chunk was kept",
			name, Bytes(end), loc, Bytes(l.MaxFile))
	}
	if l.MaxBytes > 0 && used.Bytes+end-offset > l.MaxBytes {
		return fault.Errorf(fault.StoreFull, "%s: store %s is full: %s more would pass its max-bytes %s (%s used in %d uploads); none of the chunk was kept",
			name, loc, Bytes(end-offset), Bytes(l.MaxBytes), Bytes(used.Bytes), used.Files)
	}
	return nil
}

// Bytes is a byte count for messages: exact below 1 kB, else Human's figure with the exact count.
func Bytes(n int64) string {
	if n < 1000 {
		return Human(n)
	}
	return fmt.Sprintf("%s (%d bytes)", Human(n), n)
}

// Human is a size for a person, in SI units as `du --si` and `ls -lh --si` give them: 999 B,
// 1.0 kB, 1.9 MB, 12 GB. It is the one byte formatter of every message and summary; exact counts
// go in the JSON (and in Bytes).
func Human(n int64) string {
	if n < 1000 {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n)
	for _, unit := range []string{"kB", "MB", "GB", "TB", "PB"} {
		v /= 1000
		if v < 999.5 || unit == "PB" {
			if v < 9.95 {
				return fmt.Sprintf("%.1f %s", v, unit)
			}
			return fmt.Sprintf("%.0f %s", v, unit)
		}
	}
	return fmt.Sprintf("%d B", n)
}

// Limiter keeps a store's limits in its mark, on every backend (Quota is one): Limits reads them
// (none for a store that does not exist yet), SetLimits is `store init`: it makes the store where
// one may be made and sets its limits once (the same limits again are no change; other limits on
// a store that has some are refused with upload.invalid).
type Limiter interface {
	Limits(ctx context.Context) (Limits, error)
	SetLimits(ctx context.Context, l Limits) error
}
