package store

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// fakeData is a data file held locked, kept in memory (HeldData).
type fakeData struct {
	meta      PartialMeta
	b         []byte
	failWrite bool
	synced    int
	published string
	removed   bool
	closed    bool
}

func (d *fakeData) ID() string           { return partID }
func (d *fakeData) Meta() *PartialMeta   { return &d.meta }
func (d *fakeData) Size() (int64, error) { return int64(len(d.b)), nil }
func (d *fakeData) Sync() error          { d.synced++; return nil }
func (d *fakeData) Truncate(n int64) error {
	d.b = d.b[:n]
	return nil
}
func (d *fakeData) Hash(n int64) (string, error) { return string(d.b[:n]), nil }
func (d *fakeData) Publish(n int64, sum string) (*Info, error) {
	d.published = sum
	return &Info{ID: partID, Name: d.meta.Name, Size: n}, nil
}
func (d *fakeData) Remove() error { d.removed = true; return nil }
func (d *fakeData) Close()        { d.closed = true }

func (d *fakeData) WriteAt(b []byte, off int64) error {
	if d.failWrite && off > 0 {
		return errors.New("disk on fire")
	}
	d.b = append(d.b[:off], b...)
	return nil
}

// A chunk is written in pieces and synced; one refused as too long, or whose write fails, leaves
// the file as it was; a finish publishes what the file holds, only when its sum passes the check.
func TestDataChunks(t *testing.T) {
	ctx := context.Background()
	d := &fakeData{meta: PartialMeta{Name: "a.bin", Size: -1}, b: []byte("ab")}
	up, err := DataChunks(d, 2)
	if err != nil || up.State().Offset != 2 || up.State().Name != "a.bin" || up.State().Size != -1 {
		t.Fatalf("%+v %v", up, err)
	}
	if cur, err := up.Append(ctx, 2, strings.NewReader("cde"), -1, nil); err != nil || cur != 5 || string(d.b) != "abcde" || d.synced != 1 {
		t.Fatalf("append: %d %v %q synced %d", cur, err, d.b, d.synced)
	}
	tooLong := errors.New("too long")
	if cur, err := up.Append(ctx, 5, strings.NewReader("fghij"), 3, func(int64) error { return tooLong }); err != tooLong || cur != 5 || string(d.b) != "abcde" {
		t.Fatalf("refused: %d %v %q", cur, err, d.b)
	}
	d.failWrite = true
	if cur, err := up.Append(ctx, 5, strings.NewReader("fghij"), -1, nil); err == nil || cur != 5 || string(d.b) != "abcde" {
		t.Fatalf("failed: %d %v %q", cur, err, d.b)
	}
	up, _ = DataChunks(d, 2)
	bad := errors.New("wrong sum")
	if _, _, err := up.Publish(ctx, func(string) error { return bad }); err != bad || d.published != "" {
		t.Fatalf("checked: %v %q", err, d.published)
	}
	info, already, err := up.Publish(ctx, func(sum string) error {
		if !bytes.Equal([]byte(sum), []byte("abcde")) {
			return bad
		}
		return nil
	})
	if err != nil || already || info.Size != 5 || d.published != "abcde" {
		t.Fatalf("published: %+v %v %v %q", info, already, err, d.published)
	}
	if up.Drop(ctx); !d.removed {
		t.Fatal("not removed")
	}
	if up.Close(); !d.closed {
		t.Fatal("not closed")
	}
}
