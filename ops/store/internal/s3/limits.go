package s3

import (
	"context"
	"strings"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// storeMark keeps the store's mark, the object P/.attachctl/store (store.Marker): replaced with a
// conditional write on the ETag read.
type storeMark struct{ s *Store }

func (m storeMark) MakeStore(ctx context.Context) error {
	_, err := m.s.checkStore(ctx, true)
	return err
}

// ReadMark reads the mark object; none is a prefix not made a store yet (checkStore decides what
// it is).
func (m storeMark) ReadMark(ctx context.Context) ([]byte, string, error) {
	b, etag, _, err := m.s.getObject(ctx, m.s.markKey())
	if notFound(err) {
		return nil, "", nil
	}
	return b, etag, m.s.wrap(fault.StoreUnreachable, "store mark", err)
}

func (m storeMark) ReplaceMark(ctx context.Context, body []byte, etag string) error {
	_, err := m.s.putOwn(ctx, condPut(m.s.markKey(), etag), body)
	if conflict(err) {
		return fault.Errorf(fault.UploadInvalid, "store %s: its mark changed while the limits were set; run store init again", m.s.URI)
	}
	return m.s.wrap(fault.StoreUnreachable, "store mark", err)
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
