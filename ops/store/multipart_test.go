package store

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/zeebo/blake3"
)

// fakeMultipart is a multipart upload in memory: the parts it was sent, what it was asked, and
// the failures a test gives it.
type fakeMultipart struct {
	mu       sync.Mutex
	sent     map[int32][]byte
	inFlight int
	most     int // the most parts in flight at once
	// fail: part n fails so, at once; slow: the others take a while
	fail      map[int32]error
	slow      bool
	completed []Part
	createOne bool
	complete  error // Complete's answer
	aborted   bool
	gone      bool
}

func newFakeMultipart() *fakeMultipart {
	return &fakeMultipart{sent: map[int32][]byte{}, fail: map[int32]error{}}
}

// tag is a part's Tag: its bytes, as a backend's digest of them.
func (m *fakeMultipart) Tag(b []byte) string { return "t:" + string(b) }

func (m *fakeMultipart) Send(ctx context.Context, n int32, b []byte) (Part, error) {
	m.mu.Lock()
	m.inFlight++
	m.most = max(m.most, m.inFlight)
	err := m.fail[n]
	m.mu.Unlock()
	if m.slow && err == nil {
		time.Sleep(20 * time.Millisecond)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inFlight--
	if err != nil {
		return Part{}, err
	}
	m.sent[n] = bytes.Clone(b)
	return Part{N: n, Size: int64(len(b)), Tag: m.Tag(b)}, nil
}

func (m *fakeMultipart) Complete(_ context.Context, parts []Part, createOnly bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.inFlight != 0 {
		panic("completed with parts in flight")
	}
	m.completed, m.createOne = parts, createOnly
	return m.complete
}

func (m *fakeMultipart) Abort(context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.inFlight != 0 {
		panic("aborted with parts in flight")
	}
	m.aborted = true
}

func (m *fakeMultipart) Gone(context.Context) bool { return m.gone }

// freeBufs is a free list of n buffers, made when first taken (Pump).
func freeBufs(n int) chan []byte {
	free := make(chan []byte, n)
	for range n {
		free <- nil
	}
	return free
}

func partSource(s string) SourceFile { return &memStreamSource{Reader: bytes.NewReader([]byte(s))} }

func partPass(size int64) StreamPass {
	return StreamPass{Size: size, Chunk: 4, Jobs: 2, Hash: blake3.New(), Observe: func([]byte) {}, Progress: func(int64) {}}
}

// The parts of a source are its chunks numbered from 1, the last short; a part held with the
// source's bytes (its size and Tag) is not sent again, one held with other bytes is; no more
// parts are in flight than the buffers.
func TestSendParts(t *testing.T) {
	ctx := context.Background()
	data := "aaaabbbbccccdddde"
	m := newFakeMultipart()
	m.slow = true
	held := map[int32]Part{2: {N: 2, Size: 4, Tag: m.Tag([]byte("bbbb"))}, 3: {N: 3, Size: 4, Tag: m.Tag([]byte("cccX"))}}
	parts, err := SendParts(ctx, m, partSource(data), held, partPass(int64(len(data))), freeBufs(2))
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 5 {
		t.Fatalf("parts %v", parts)
	}
	for i, p := range parts {
		want := data[i*4 : min(i*4+4, len(data))]
		if p.N != int32(i+1) || p.Size != int64(len(want)) || p.Tag != m.Tag([]byte(want)) {
			t.Fatalf("part %d: %+v, want %q", i+1, p, want)
		}
	}
	if _, ok := m.sent[2]; ok || len(m.sent) != 4 || string(m.sent[3]) != "cccc" {
		t.Fatalf("sent %q; want every part but the one held with the same bytes", m.sent)
	}
	if m.most > 2 {
		t.Fatalf("%d parts in flight with 2 buffers", m.most)
	}
}

// A part's failure stops the parts after it, and is returned once the parts in flight are
// answered; a write of parts (PutParts) aborts then, and a multipart upload gone meanwhile is
// upload.unreadable. One whose check refuses the bytes sent is aborted, not completed; one that
// passes is completed, create-only when told.
func TestPutParts(t *testing.T) {
	ctx := context.Background()
	data := strings.Repeat("x", 40)
	ok := func(string) error { return nil }
	bad := fault.Errorf(fault.UploadSourceChange, "changed")
	for _, tc := range []struct {
		name    string
		fail    error
		check   func(string) error
		code    fault.Code
		aborted bool
	}{
		{"sent", nil, ok, "", false},
		{"a part fails", fault.Errorf(fault.StoreUnreachable, "reset"), ok, fault.StoreUnreachable, true},
		{"the upload went away", ErrNoObject, ok, fault.UploadUnreadable, true},
		{"the check refuses", nil, func(string) error { return bad }, fault.UploadSourceChange, true},
	} {
		m := newFakeMultipart()
		m.fail[3], m.slow = tc.fail, true
		err := PutParts(ctx, m, "k", partSource(data), int64(len(data)), 4, 2, freeBufs(2), true, tc.check)
		if fault.CodeOf(err) != tc.code || m.aborted != tc.aborted {
			t.Fatalf("%s: %v, aborted %v", tc.name, err, m.aborted)
		}
		if tc.fail != nil && len(m.sent) > 4 {
			t.Fatalf("%s: %d parts sent after part 3 failed", tc.name, len(m.sent))
		}
		if (m.completed != nil) != (tc.code == "") || tc.code == "" && (len(m.completed) != 10 || !m.createOne) {
			t.Fatalf("%s: completed %v create-only %v", tc.name, m.completed, m.createOne)
		}
	}
}

// A stream's multipart write holds the bytes of the parts kept until it restarts; a part sent to a
// multipart upload gone, or a failure while it is gone, is ErrWriteGone, and any other failure
// is itself; a completion refused as another's first is not taken, and no error.
func TestMultipartWrite(t *testing.T) {
	ctx := context.Background()
	data := "aaaabbbbcc"
	m := newFakeMultipart()
	w := &MultipartWrite{M: m, Kept: map[int32]Part{1: {N: 1, Size: 4, Tag: m.Tag([]byte("aaaa"))}, 2: {N: 2, Size: 4, Tag: "other"}},
		Free: func(StreamPass) chan []byte { return freeBufs(2) }}
	if w.Held() != 8 {
		t.Fatalf("held %d", w.Held())
	}
	if err := w.Send(ctx, partSource(data), 0, partPass(int64(len(data)))); err != nil || len(m.sent) != 2 {
		t.Fatalf("send: %v, sent %q", err, m.sent)
	}
	if taken, err := w.Complete(ctx); !taken || err != nil || len(m.completed) != 3 || !m.createOne {
		t.Fatalf("complete: %v, %v, %v", taken, err, m.completed)
	}
	w.Restart()
	if w.Held() != 0 {
		t.Fatalf("held %d after a restart", w.Held())
	}
	unreachable := fault.Errorf(fault.StoreUnreachable, "reset")
	for _, tc := range []struct {
		fail error
		gone bool
		want error
	}{{ErrNoObject, false, ErrWriteGone}, {unreachable, true, ErrWriteGone}, {unreachable, false, unreachable}} {
		m.fail[2], m.gone = tc.fail, tc.gone
		if err := w.Send(ctx, partSource(data), 0, partPass(int64(len(data)))); !errors.Is(err, tc.want) {
			t.Fatalf("%v, gone %v: %v, want %v", tc.fail, tc.gone, err, tc.want)
		}
	}
	for _, e := range []error{ErrObjectChanged, ErrNoObject, unreachable} {
		m.complete = e
		if taken, err := w.Complete(ctx); taken || err != map[bool]error{true: unreachable, false: nil}[e == unreachable] {
			t.Fatalf("complete answered %v: %v, %v", e, taken, err)
		}
	}
}
