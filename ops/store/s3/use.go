package s3

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// marker is the state of an upload's .used object.
type marker struct {
	exists    bool
	tombstone bool
	at        time.Time // when last used (or, for a tombstone, when the sweep wrote it); zero when not read
	etag      string
}

// A marker's body is "KIND TIME NONCE\n" with a time of fixed width, so a used marker and a
// tombstone differ in size and a listing tells them apart without reading them.
const (
	markerTime = "2006-01-02T15:04:05.000000000Z"
	usedSize   = len("used ") + len(markerTime) + 1 + 16 + 1
	tombSize   = len("tombstone ") + len(markerTime) + 1 + 16 + 1
)

func (s *Store) readMarker(ctx context.Context, id string) (marker, error) {
	b, etag, _, err := s.getObject(ctx, s.usedKey(id))
	if err != nil {
		if notFound(err) {
			return marker{}, nil
		}
		return marker{}, s.wrap(manifest.UploadUnreadable, "marker of "+id, err)
	}
	f := strings.Fields(string(b))
	if len(f) < 2 || (f[0] != "used" && f[0] != "tombstone") {
		return marker{}, manifest.Errorf(manifest.UploadUnreadable, "upload %s: %s is not an attachctl marker", id, s.usedKey(id))
	}
	return marker{exists: true, tombstone: f[0] == "tombstone", at: parseTime(f[1]), etag: etag}, nil
}

// lookUp lists P/<id>/ once: the finished upload's name ("" when there is none) and its marker,
// told used or tombstone by its size (read when the size says neither).
func (s *Store) lookUp(ctx context.Context, id string) (string, marker, error) {
	prefix := s.key(id) + "/"
	name, m, odd := "", marker{}, false
	err := s.listObjects(ctx, prefix, func(o types.Object) error {
		n := strings.TrimPrefix(aws.ToString(o.Key), prefix)
		switch {
		case n == UsedName:
			m = marker{exists: true, etag: aws.ToString(o.ETag)}
			switch aws.ToInt64(o.Size) {
			case int64(usedSize):
			case int64(tombSize):
				m.tombstone = true
			default:
				odd = true
			}
		case name == "" && store.ValidName(n) == nil:
			name = n
		}
		return nil
	})
	if err != nil {
		return "", m, s.wrap(manifest.UploadUnreadable, "upload "+id, err)
	}
	if odd {
		m, err = s.readMarker(ctx, id)
	}
	return name, m, err
}

// writeMarker replaces the marker m (as read) by a new one, conditionally: If-Match its ETag, or
// If-None-Match: * when there was none. The body carries a fresh nonce so that every write makes
// a new ETag. It returns the new ETag; a lost race is an error for which isConflict is true.
func (s *Store) writeMarker(ctx context.Context, id string, m marker, kind string, at time.Time) (string, error) {
	nonce := make([]byte, 8)
	rand.Read(nonce)
	body := fmt.Sprintf("%s %s %s\n", kind, at.UTC().Format(markerTime), hex.EncodeToString(nonce))
	in := &awss3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String(s.usedKey(id)), Body: bytes.NewReader([]byte(body))}
	if m.exists {
		in.IfMatch = aws.String(m.etag)
	} else {
		in.IfNoneMatch = aws.String("*")
	}
	out, err := s.client.PutObject(ctx, in)
	if err != nil {
		if notFound(err) { // If-Match on a marker deleted meanwhile
			return "", errConflict
		}
		return "", err
	}
	return aws.ToString(out.ETag), nil
}

var errConflict = fmt.Errorf("conditional write lost")

func isConflict(err error) bool { return err == errConflict || conflict(err) }

// MarkUsed marks finished uploads used at at. Each id is looked up first (one listing of its
// folder: a finished upload whose marker is not a tombstone), then each marker is replaced by a
// conditional write. A write that loses to a sweep's tombstone is upload.missing. A write that
// replaced the marker it read (If-Match) proves the upload was there: a sweep deletes only after
// its tombstone replaced that marker. A marker written where there was none (If-None-Match) may
// follow a sweep that finished meanwhile, so the upload is looked at once more, and one that is
// gone loses the marker again and is upload.missing: no marker outlives its upload.
func (s *Store) MarkUsed(ctx context.Context, ids []string, at time.Time) error {
	for _, id := range ids {
		if err := store.ValidID(id); err != nil {
			return err
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if err := s.exists(ctx, ids[0]); err != nil {
		return err
	}
	names := make([]string, len(ids))
	marks := make([]marker, len(ids))
	err := forEach(ctx, len(ids), func(i int) error {
		var err error
		names[i], marks[i], err = s.lookUp(ctx, ids[i])
		switch {
		case err != nil:
			return err
		case names[i] == "":
			return s.missing(ids[i])
		case marks[i].tombstone:
			return s.swept(ids[i])
		}
		return nil
	})
	if err != nil {
		return err
	}
	return forEach(ctx, len(ids), func(i int) error { return s.markOne(ctx, ids[i], names[i], marks[i], at) })
}

func (s *Store) swept(id string) error {
	return manifest.Errorf(manifest.UploadMissing, "upload %s: being removed by a sweep of store %s", id, s.URI)
}

func (s *Store) markOne(ctx context.Context, id, name string, m marker, at time.Time) error {
	for try := 0; ; try++ {
		etag, err := s.writeMarker(ctx, id, m, "used", at)
		if err == nil {
			if m.exists {
				return nil
			}
			_, herr := s.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &s.Bucket, Key: aws.String(s.FinishedKey(id, name))})
			if herr == nil {
				return nil
			}
			if !notFound(herr) {
				return s.wrap(manifest.UploadUnreadable, "upload "+id, herr)
			}
			s.client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &s.Bucket, Key: aws.String(s.usedKey(id)), IfMatch: aws.String(etag)})
			return s.missing(id)
		}
		if !isConflict(err) {
			return s.wrap(manifest.UploadUnreadable, "marker of "+id, err)
		}
		if try == 20 {
			return manifest.Errorf(manifest.StoreLocked, "upload %s: its marker kept changing under %d tries", id, try)
		}
		// Another use or a sweep wrote first: look again and go again.
		if name, m, err = s.lookUp(ctx, id); err != nil {
			return err
		}
		if name == "" {
			return s.missing(id)
		}
		if m.tombstone {
			return s.swept(id)
		}
	}
}

// forEach runs f for 0..n-1, a few at a time (requests are round trips, not work), and returns
// the first error.
func forEach(ctx context.Context, n int, f func(int) error) error {
	const width = 16
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  int
	)
	for w := 0; w < min(width, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				stop := first != nil || i >= n
				mu.Unlock()
				if stop || ctx.Err() != nil {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}
