package s3

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// A lease is a lock object of the store that holds for a while after each write: the sweep lock
// and the limits lock. How one is created, taken over, renewed, read back after a refusal and let
// go, and what its body and metadata hold, is docs/store.md's ("S3 stores": the sweep lock and
// the limits lock are one kind of lease).
type lease struct {
	s           *Store
	key         string
	tag         string        // the body's first word: "sweep", "limits" (errors say "<tag> lock")
	dur         time.Duration // how long each write holds it
	nonceInBody bool          // the body ends with the nonce
	nonce       string
	meta        map[string]string // holder and nonce
	etag        string            // of the lock as last written (or found to be its own)

	stop, done chan struct{} // the renewal's (keep), nil when it is not renewed
	lost       atomic.Bool   // a renewal lost: another holder has the lock now (or nobody)
}

// The metadata keys of a lease: its holder, named so that a sweep or rm that cannot have it says
// who has it, and the holder's nonce.
const (
	holderKey = "holder"
	nonceKey  = "nonce"
)

// lockKey is the object of the lease tag: P/.attachctl/<tag>.lock.
func (s *Store) lockKey(tag string) string { return s.key(internalDir, tag+".lock") }

func (s *Store) newLease(tag string, dur time.Duration, nonceInBody bool) *lease {
	nonce := newNonce()
	return &lease{s: s, key: s.lockKey(tag), tag: tag, dur: dur, nonceInBody: nonceInBody, nonce: nonce,
		meta: map[string]string{holderKey: store.Me().String(), nonceKey: nonce}}
}

func (l *lease) body() string {
	b := l.tag + " " + time.Now().UTC().Add(l.dur).Format(time.RFC3339Nano)
	if l.nonceInBody {
		b += " " + l.nonce
	}
	return b + "\n"
}

// expired tells whether a lock's body says its lease ran out, or is not of the form body writes.
func (l *lease) expired(body []byte) bool {
	f := strings.Fields(string(body))
	return len(f) != len(strings.Fields(l.body())) || time.Now().After(parseTime(f[1]))
}

// put writes the lock under in's condition (putOwn: a refused write that finds this holder's nonce
// is its own); refused, it returns what holds the lock now (its ETag "" when it could not be read).
func (l *lease) put(ctx context.Context, in *awss3.PutObjectInput) (object, error) {
	in.Key, in.Metadata = &l.key, l.meta
	o, err := l.s.putOwn(ctx, in, []byte(l.body()))
	if err == nil {
		l.etag = o.etag
	}
	return o, err
}

// take takes the lock, waiting up to wait (pausing from pause up to most between tries), and
// keeps it renewed until Unlock. A lock still held then is store.locked, naming its holder (as
// store.HeldBy names it): running says what holding it means, who is "that sweep".
func (l *lease) take(ctx context.Context, wait, pause, most time.Duration, running, who string) error {
	deadline := time.Now().Add(wait)
	for ; ; pause = min(2*pause, most) {
		found, err := l.put(ctx, &awss3.PutObjectInput{IfNoneMatch: aws.String("*")})
		if err == nil {
			l.keep()
			return nil
		}
		if !conflict(err) {
			return l.s.wrap(fault.StoreUnreachable, l.tag+" lock", err)
		}
		if found.etag != "" && l.expired(found.body) {
			if found, err = l.put(ctx, &awss3.PutObjectInput{IfMatch: aws.String(found.etag)}); err == nil {
				l.keep()
				return nil
			}
		}
		if time.Now().Add(pause).After(deadline) {
			// The holder the lock read back names (none known: a lock of an earlier version, or
			// one that could not be read).
			h, known := store.ParseHolder(found.meta[holderKey])
			return fault.Errorf(fault.StoreLocked, "store %s: the %s lock%s %s %s (free at the latest %v after %s stopped)",
				l.s.URI, l.tag, running, l.key, store.HeldBy(h, known, wait), l.dur, who)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
	}
}

// keep renews the lock taken every dur/4 until Unlock, so that a holder that holds it longer
// than its lease (a sweep; a limits check that lists a large store) keeps it: each renewal is
// written If-Match the ETag written last. Once one loses (another holder has the lock now, or
// nobody: it is gone), lost says so from then on; the renewals go on, as one that failed
// otherwise is tried again at the next.
func (l *lease) keep() {
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(l.done)
		t := time.NewTicker(l.dur / 4)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
			}
			_, err := l.put(context.Background(), &awss3.PutObjectInput{IfMatch: aws.String(l.etag)})
			if conflict(err) || notFound(err) {
				l.lost.Store(true)
			}
		}
	}()
}

// Unlock lets the lock go (store.LimitsLock's, and the sweep's): held is whether it was still
// this holder's, read back (a server may let two create-only writes that race both succeed).
func (l *lease) Unlock(ctx context.Context) (held bool, err error) {
	if l.stop != nil {
		close(l.stop)
		<-l.done
		l.stop = nil
	}
	o, err := l.s.readObjectUpTo(ctx, l.key, 0) // its holder's nonce is in its metadata
	switch {
	case notFound(err):
		return false, nil
	case err != nil:
		return false, l.s.wrap(fault.StoreUnreachable, l.tag+" lock", err)
	case o.meta[nonceKey] != l.nonce:
		return false, nil
	}
	_, err = l.s.client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &l.s.Bucket, Key: &l.key, IfMatch: aws.String(o.etag)})
	if notFound(err) || conflict(err) { // taken over since it was read: the next holder's now
		err = nil
	}
	return true, l.s.wrap(fault.StoreUnreachable, l.tag+" lock", err)
}
