package s3

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Limits returns the store's limits, from its mark (none for a store not made yet, or whose mark
// is of an earlier version).
func (s *Store) Limits(ctx context.Context) (store.Limits, error) { return s.quota.Limits(ctx) }

// readLimits reads the limits of the mark object.
func (s *Store) readLimits(ctx context.Context) (store.Limits, error) {
	b, _, _, err := s.getObject(ctx, s.markKey())
	switch {
	case notFound(err):
		return store.Limits{}, nil // not a store yet: checkStore decides what it is
	case err != nil:
		return store.Limits{}, s.wrap(fault.StoreUnreachable, "store mark", err)
	}
	return limitsOf(s.URI+"/"+s.markKey(), string(b))
}

// The mark object is lines of text (partial.go): "attachctl store", what was found of the
// server's conditional writes, and, once store init set them, the limits as one line
// "limits {"maxFile":N,"maxBytes":N,"maxFiles":N}".
const limitsPrefix = "limits "

// limitsOf reads the limits of a mark's body (none when it has no limits line).
func limitsOf(where, body string) (store.Limits, error) {
	line := strings.TrimSuffix(limitsLine(body), "\n")
	if line == "" {
		return store.Limits{}, nil
	}
	return store.ParseMark(where, []byte(`{"attachctl":"store","limits":`+strings.TrimPrefix(line, limitsPrefix)+`}`))
}

// limitsLine is the mark's limits line, its newline included ("" when it has none), so that a
// mark rewritten for another reason keeps it.
func limitsLine(body string) string {
	for _, line := range strings.SplitAfter(body, "\n") {
		if strings.HasPrefix(line, limitsPrefix) {
			if !strings.HasSuffix(line, "\n") {
				line += "\n"
			}
			return line
		}
	}
	return ""
}

// withLimits is the mark's body with its limits line set to l.
func withLimits(body string, l store.Limits) string {
	b, _ := json.Marshal(l)
	out := markLine + limitsPrefix + string(b) + "\n"
	for _, line := range strings.SplitAfter(body, "\n") {
		if line != "" && line != markLine && !strings.HasPrefix(line, limitsPrefix) {
			out += line
		}
	}
	return out
}

// The reservations' primitives (store.Reserver). A reservation is the object
// P/.attachctl/reserved/<id>, created If-None-Match: *. The limits lock is the lease (lease.go)
// P/.attachctl/limits.lock. A server may let two create-only writes that race both succeed
// (versitygw's posix backend checks, then writes): so Unlock reads the lock back, and a holder
// that does not find its own nonce there lost the lock while it held it, and what it wrote under
// it is undone and done again. Two holders that both find their own nonce held it at times apart,
// so the later one counted what the earlier reserved.
const reservedDir = "reserved"

// limitsLease is how long the limits lock holds without being renewed: a check renews it while
// it runs (lease.keep), so a killed upload frees the store within it.
var limitsLease = 30 * time.Second

func (s *Store) reservedKey(id string) string { return s.key(internalDir, reservedDir, id) }

type reserver struct{ s *Store }

// LockLimits takes the limits lock (a lease, lease.go), held while one upload is checked and
// renewed meanwhile: the check lists the store, which may take longer than the lease.
func (r reserver) LockLimits(ctx context.Context, wait time.Duration) (store.LimitsLock, error) {
	l := r.s.newLease("limits", limitsLease, true)
	if err := l.take(ctx, wait, 5*time.Millisecond, 200*time.Millisecond, "", "its holder"); err != nil {
		return nil, err
	}
	return l, nil
}

// PutReservation writes the reservation create-only; its body names its holder, so finding these
// very bytes there is this write (putOwn).
func (r reserver) PutReservation(ctx context.Context, key string, body []byte) error {
	_, err := r.s.putOwn(ctx, &awss3.PutObjectInput{Key: aws.String(r.s.reservedKey(key)), IfNoneMatch: aws.String("*")}, body)
	return r.s.wrap(fault.StoreUnreachable, "reservation "+key, err)
}

func (r reserver) Reservations(ctx context.Context) (map[string][]byte, error) {
	s := r.s
	out := map[string][]byte{}
	prefix := s.reservedKey("")
	err := s.listObjects(ctx, prefix, func(o types.Object) error {
		key := strings.TrimPrefix(aws.ToString(o.Key), prefix)
		b, _, _, err := s.getObject(ctx, aws.ToString(o.Key))
		switch {
		case notFound(err): // dropped meanwhile
		case err != nil:
			return err
		default:
			out[key] = b
		}
		return nil
	})
	if err != nil {
		return nil, s.wrap(fault.StoreUnreachable, "reservations", err)
	}
	return out, nil
}

func (r reserver) DropReservation(ctx context.Context, key string) error {
	_, err := r.s.client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &r.s.Bucket, Key: aws.String(r.s.reservedKey(key))})
	if notFound(err) {
		return nil
	}
	return r.s.wrap(fault.StoreUnreachable, "reservation "+key, err)
}

// SetLimits is `store init` on an S3 store: it makes the store (its mark) where it may be one and
// sets its limits in the mark, once: a store with limits keeps them (the same again is no change),
// one without gets these, replaced with a conditional write on the mark's ETag.
func (s *Store) SetLimits(ctx context.Context, l store.Limits) error {
	if _, err := s.checkStore(ctx, true); err != nil {
		return err
	}
	b, etag, _, err := s.getObject(ctx, s.markKey())
	if err != nil {
		return s.wrap(fault.StoreUnreachable, "store mark", err)
	}
	have, err := limitsOf(s.URI+"/"+s.markKey(), string(b))
	if err != nil {
		return err
	}
	return s.quota.Set(l, have, "rewriting "+s.markKey(), func() error {
		_, err := s.client.PutObject(ctx, &awss3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String(s.markKey()),
			Body: strings.NewReader(withLimits(string(b), l)), IfMatch: aws.String(etag)})
		if conflict(err) {
			return fault.Errorf(fault.UploadInvalid, "store %s: its mark changed while the limits were set; run store init again", s.URI)
		}
		return s.wrap(fault.StoreUnreachable, "store mark", err)
	})
}
