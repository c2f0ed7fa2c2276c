package stage_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/stage"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/storetest"
)

// writeCounter is a store that records the length of every write handed to it.
type writeCounter struct {
	store.Backend
	writes []int64
}

func (w *writeCounter) Write(ctx context.Context, id string, offset int64, r io.Reader) (int64, error) {
	n, err := w.Backend.Write(ctx, id, offset, r)
	w.writes = append(w.writes, n-offset)
	return n, err
}

// failingReader yields data, then fails with err; cancel, when set, is called before it fails,
// as a signal would while the command reads standard input.
type failingReader struct {
	data   []byte
	err    error
	cancel func()
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		if f.cancel != nil {
			f.cancel()
		}
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

// TestUploadReader: a reader is uploaded whole as one finished file, in writes of at most the
// piece (the last one empty: that is how its end is found), its bytes counted as they pass.
func TestUploadReader(t *testing.T) {
	for _, tc := range []struct {
		name   string
		data   string
		piece  int64
		writes []int64
	}{
		{"empty", "", 4, []int64{0}},
		{"under a piece", "abc", 4, []int64{3, 0}},
		{"a piece exactly", "abcd", 4, []int64{4, 0}},
		{"pieces and a rest", "abcdefghij", 4, []int64{4, 4, 2, 0}},
		{"the default piece", "hello world\n", 0, []int64{12, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &writeCounter{Backend: storetest.NewMem("mem://reader")}
			var begun string
			var counted int64
			info, err := stage.UploadReader(bg, b, "in.txt", strings.NewReader(tc.data), stage.ReaderOptions{
				Piece:    tc.piece,
				Begun:    func(id string) { begun = id },
				Progress: func(n int64) { counted += n },
			})
			if err != nil {
				t.Fatal(err)
			}
			if begun == "" || begun != info.ID {
				t.Errorf("Begun was told %q, the upload is %q", begun, info.ID)
			}
			if info.Name != "in.txt" || info.Size != int64(len(tc.data)) || info.Blake3 != hexOf([]byte(tc.data)) {
				t.Errorf("finished %+v, want in.txt of %d bytes, BLAKE3 %s", info, len(tc.data), hexOf([]byte(tc.data)))
			}
			if counted != int64(len(tc.data)) {
				t.Errorf("progress counted %d bytes, want %d", counted, len(tc.data))
			}
			if !slices.Equal(b.writes, tc.writes) {
				t.Errorf("writes %v, want %v", b.writes, tc.writes)
			}
			r, err := b.Open(bg, info.ID, info.Name)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got, err := io.ReadAll(r)
			if err != nil || !bytes.Equal(got, []byte(tc.data)) {
				t.Errorf("stored %q (%v), want %q", got, err, tc.data)
			}
			rec := stage.FinishedRecord(b, info)
			if rec.Upload == nil || rec.Upload.ID != info.ID || rec.Upload.Store != "mem://reader" || rec.Name != "in.txt" ||
				rec.Blake3 != info.Blake3 || rec.Path != rec.Upload.Path {
				t.Errorf("record %+v (upload %+v) is not the finished upload's", rec, rec.Upload)
			}
		})
	}
}

// TestUploadReaderFails: an upload that cannot be completed is aborted (the reader cannot be read
// again to resume it), an interrupted one says so with its code, and a name the store refuses
// begins nothing.
func TestUploadReaderFails(t *testing.T) {
	broken := errors.New("the pipe broke")
	for _, tc := range []struct {
		name      string
		upload    string
		in        func(cancel func()) io.Reader
		code      fault.Code
		says      string // the message names the cause
		wantBegun bool
	}{
		{"the reader fails", "in.txt", func(func()) io.Reader { return &failingReader{data: []byte("abcdef"), err: broken} },
			fault.FileUnreadable, broken.Error(), true},
		{"interrupted", "in.txt", func(cancel func()) io.Reader {
			return &failingReader{data: []byte("abcdef"), err: context.Canceled, cancel: cancel}
		}, fault.UploadInterrupted, "interrupted", true},
		{"a name the store refuses", "a/b", func(func()) io.Reader { return strings.NewReader("abc") },
			fault.UploadInvalid, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(bg)
			defer cancel()
			b := storetest.NewMem("mem://reader")
			begun := false
			info, err := stage.UploadReader(ctx, b, tc.upload, tc.in(cancel), stage.ReaderOptions{Piece: 4, Begun: func(string) { begun = true }})
			if err == nil {
				t.Fatalf("uploaded %+v, want a failure", info)
			}
			if fault.CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %v, want code %s saying %q", err, tc.code, tc.says)
			}
			if begun != tc.wantBegun {
				t.Errorf("Begun called: %v, want %v", begun, tc.wantBegun)
			}
			l, err := b.List(bg)
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Entries) != 0 {
				t.Errorf("left in the store: %+v; a failed upload is aborted", l.Entries)
			}
		})
	}
}
