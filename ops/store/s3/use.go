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
)

// marker is the state of an upload's .used object.
type marker struct {
	exists    bool
	tombstone bool
	at        time.Time // when last used (or, for a tombstone, when the sweep wrote it)
	etag      string
}

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

// writeMarker replaces the marker m (as read) by a new one, conditionally: If-Match its ETag, or
// If-None-Match: * when there was none. The body carries a fresh nonce so that every write makes
// a new ETag. It returns the new ETag; a lost race is an error for which conflict is true.
func (s *Store) writeMarker(ctx context.Context, id string, m marker, kind string, at time.Time) (string, error) {
	nonce := make([]byte, 8)
	rand.Read(nonce)
	body := fmt.Sprintf("%s %s %s\n", kind, at.UTC().Format(time.RFC3339Nano), hex.EncodeToString(nonce))
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

// MarkUsed marks finished uploads used at at. Each id is checked first (a finished upload whose
// marker is not a tombstone), then each marker is replaced by a conditional write; a write that
// loses to a sweep's tombstone is upload.missing. After its write, the upload is looked at once
// more: one removed meanwhile (its sweep deleted the tombstone before this write made a new
// marker) loses its marker again and is upload.missing, so no marker outlives its upload.
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
		name, err := s.finishedName(ctx, ids[i])
		if err != nil {
			return err
		}
		if name == "" {
			return s.missing(ids[i])
		}
		names[i] = name
		marks[i], err = s.readMarker(ctx, ids[i])
		if err == nil && marks[i].tombstone {
			err = s.swept(ids[i])
		}
		return err
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
		// Another use or a sweep wrote first: read what it wrote and go again.
		if m, err = s.readMarker(ctx, id); err != nil {
			return err
		}
		if m.tombstone {
			return s.swept(id)
		}
	}
}

// forEach runs f for 0..n-1, a few at a time (requests are round trips, not work), and returns
// the first error.
func forEach(ctx context.Context, n int, f func(int) error) error {
	const width = 8
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
