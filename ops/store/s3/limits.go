package s3

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// quota is the store's limits, read from its mark object once, and what it holds, counted on the
// first upload begun and kept up to date by this process's uploads (as in the local store).
type quota struct {
	mu     sync.Mutex
	read   bool
	limits store.Limits
	tally  store.Tally
}

// Limits returns the store's limits, from its mark (none for a store not made yet, or whose mark
// is of an earlier version).
func (s *Store) Limits(ctx context.Context) (store.Limits, error) {
	s.quota.mu.Lock()
	defer s.quota.mu.Unlock()
	return s.limitsLocked(ctx)
}

func (s *Store) limitsLocked(ctx context.Context) (store.Limits, error) {
	q := &s.quota
	if q.read {
		return q.limits, nil
	}
	b, _, _, err := s.getObject(ctx, s.markKey())
	switch {
	case notFound(err):
		return store.Limits{}, nil // not a store yet: checkStore decides what it is
	case err != nil:
		return store.Limits{}, s.wrap(manifest.StoreUnreachable, "store mark", err)
	}
	l, err := limitsOf(s.URI+"/"+s.markKey(), string(b))
	if err != nil {
		return l, err
	}
	q.read, q.limits = true, l
	return l, nil
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

// admit checks a new upload of size bytes (-1: open) named name against the limits and counts it
// when admitted, before anything of it is sent.
func (s *Store) admit(ctx context.Context, name string, size int64) error {
	l, err := s.Limits(ctx)
	if err != nil {
		return err
	}
	return s.quota.tally.Admit(l, s.URI, name, size, func() (*store.Listing, error) { return s.List(ctx) })
}

// admitChunk checks a chunk of n bytes at offset cur of the unfinished upload name.
func (s *Store) admitChunk(ctx context.Context, name string, cur, n int64) error {
	l, err := s.Limits(ctx)
	if err != nil || l.MaxFile == 0 && l.MaxBytes == 0 {
		return err
	}
	ls, err := s.List(ctx)
	if err != nil {
		return err
	}
	return l.AdmitBytes(s.URI, name, cur, cur+n, store.UsageOf(ls))
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
		return s.wrap(manifest.StoreUnreachable, "store mark", err)
	}
	have, err := limitsOf(s.URI+"/"+s.markKey(), string(b))
	if err != nil {
		return err
	}
	switch {
	case have == l:
		return nil
	case !have.None():
		return manifest.Errorf(manifest.UploadInvalid, "store %s: already has limits (%s); they are set once, when the store is made (or by rewriting %s)", s.URI, have, s.markKey())
	}
	_, err = s.client.PutObject(ctx, &awss3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String(s.markKey()),
		Body: strings.NewReader(withLimits(string(b), l)), IfMatch: aws.String(etag)})
	if conflict(err) {
		return manifest.Errorf(manifest.UploadInvalid, "store %s: its mark changed while the limits were set; run store init again", s.URI)
	}
	if err != nil {
		return s.wrap(manifest.StoreUnreachable, "store mark", err)
	}
	s.quota.mu.Lock()
	s.quota.read, s.quota.limits = true, l
	s.quota.mu.Unlock()
	s.quota.tally.Reset()
	return nil
}
