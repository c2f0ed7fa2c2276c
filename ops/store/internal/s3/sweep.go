package s3

import (
	"context"
	"strings"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// multipart is one multipart upload in progress under the store.
type multipart struct {
	id, name, key, uploadID string
	initiated               time.Time
}

func (s *Store) multiparts(ctx context.Context, prefix string) ([]multipart, error) {
	var mps []multipart
	root := s.root()
	in := &awss3.ListMultipartUploadsInput{Bucket: &s.Bucket, Prefix: &prefix}
	for {
		out, err := s.client.ListMultipartUploads(ctx, in)
		if err != nil {
			return nil, s.wrap(fault.StoreUnreachable, "list multipart uploads", err)
		}
		for _, u := range out.Uploads {
			id, name, ok := store.MultipartOf(strings.TrimPrefix(aws.ToString(u.Key), root))
			if !ok {
				continue
			}
			mps = append(mps, multipart{id: id, name: name, key: aws.ToString(u.Key), uploadID: aws.ToString(u.UploadId), initiated: aws.ToTime(u.Initiated).UTC()})
		}
		if !aws.ToBool(out.IsTruncated) {
			return mps, nil
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

// SweepLease is how long a sweep's hold counts without being renewed: the sweep that runs renews
// it every SweepLease/4, so a sweep killed with kill -9 frees the store within SweepLease, and
// a cron sweep finds it free the next time it runs.
var SweepLease = 2 * time.Minute

// Sweep takes the store's sweep lock (store.Lease), renewed while the sweep runs (keep). A dry run
// writes nothing, the lock included.
func (s *Store) Sweep(ctx context.Context, wait time.Duration, dryRun bool) (store.Sweeper, error) {
	ok, err := s.checkStore(ctx, false)
	if err != nil {
		return nil, err
	}
	if !ok || dryRun {
		return &sweeper{s: s, dryRun: dryRun}, nil
	}
	l := store.NewLease(objects{s}, s.URI, "sweep", SweepLease, false)
	if err := l.Take(ctx, wait, 10*time.Millisecond, time.Second, " (another sweep or rm is running)", "that sweep"); err != nil {
		return nil, err
	}
	return &sweeper{s: s, lock: l}, nil
}

type sweeper struct {
	s      *Store
	dryRun bool
	lock   *store.Lease // nil when it holds none
}

// Close stops the renewal and lets the lock go.
func (sw *sweeper) Close() error {
	if sw.lock == nil {
		return nil
	}
	_, err := sw.lock.Unlock(context.Background())
	sw.lock = nil
	return err
}

// Remove is store.Sweeper's Remove, the re-check written once (store.SweepRemove) over the
// primitives below. A finished upload is removed only after its marker was replaced by a
// tombstone with a conditional write that won: a use that wrote first makes the write fail
// (Kept), a use that comes after finds the tombstone. A tombstone cannot be taken back, so a
// decided removal is finished even when the sweep is signalled meanwhile.
func (sw *sweeper) Remove(ctx context.Context, cands []store.Entry, stale func(store.Entry) bool, each func(store.Entry, store.Outcome, error) error) error {
	return store.SweepRemove(ctx, sw, sw.dryRun, cands, stale, each)
}

func (sw *sweeper) SweepProperties() store.SweepProperties {
	return store.SweepProperties{Batch: 1, Jobs: 1}
}

// Exclude holds nothing (the tombstone's conditional write is the exclusion): it stops the sweep
// when its lease was lost (the sweep stalled past its lease and another took the store over).
func (sw *sweeper) Exclude(context.Context) (func(), error) {
	if sw.lock != nil && sw.lock.Lost() {
		return nil, fault.Errorf(fault.StoreLocked, "store %s: the sweep lock was taken over (this sweep stalled past its lease); stopped", sw.s.URI)
	}
	return func() {}, nil
}

// doomed is what Recheck learnt of an unfinished entry, for Drop (a finished one's is
// store.ObjectDoomed).
type doomed struct {
	leftover bool         // a folder upload's files with no info (a sweep killed while removing it)
	pi       *partialInfo // an unfinished upload's info (nil: a multipart upload that has none)
}

// Recheck decides each entry again from what the server says now: one walk of P/<id>/ shows
// whether the finished upload is still there (what it holds does not change; its marker is read
// for its last use), or what a partial wrote there. An unfinished upload finished since it was
// listed is Gone: what is left of it is the finish's, no upload to report; the next sweep judges
// the finished upload and drops the leftover, as the local store looks.
func (sw *sweeper) Recheck(ctx context.Context, c store.Entry) (store.Reread, error) {
	s := sw.s
	l, err := s.walkID(ctx, c.ID)
	if err != nil {
		return store.Reread{}, err
	}
	got := l.read()
	if !got.Still(c) {
		return store.Reread{}, store.NotUnfinished(c.ID, s.URI)
	}
	if c.Finished {
		return s.removal.RecheckMarked(ctx, c.ID, got.Holds == store.HoldsFolder)
	}
	u, pi, err := s.unfinishedNow(ctx, c.ID, l, true)
	return store.Reread{State: u.State, Note: &doomed{pi: pi, leftover: u.Holds == store.UnfinishedLeftover}}, err
}

// Doom replaces a finished upload's marker by a tombstone, conditionally
// (store.ObjectRemoval.DoomMarked); an unfinished upload has no use to race.
func (sw *sweeper) Doom(ctx context.Context, it *store.SweepItem) error {
	if d, ok := it.Note.(*store.ObjectDoomed); ok {
		return sw.s.removal.DoomMarked(ctx, it.Entry.ID, d)
	}
	return nil
}

func (sw *sweeper) Restore(*store.SweepItem) {}

// DropLeftover deletes a finish's partials, or a sweep's tombstone left alone (store.DropTombstone).
// Nothing is written beside a tombstone after the listing: an id's objects are written by its own
// upload, which finished before a sweep wrote the tombstone, and a use finds the tombstone and
// writes nothing.
func (sw *sweeper) DropLeftover(ctx context.Context, l store.Leftover) error {
	s := sw.s
	if l.Partial {
		return s.dropPartial(ctx, l.ID, nil)
	}
	return store.DropTombstone(ctx, objects{s}, l.ID)
}

// Drop deletes what the entry holds: a finished upload in the order store.ObjectRemoval keeps,
// an unfinished one's partial then its multipart uploads.
func (sw *sweeper) Drop(ctx context.Context, it *store.SweepItem) error {
	s, id := sw.s, it.Entry.ID
	switch d := it.Note.(type) {
	case *store.ObjectDoomed:
		return s.removal.DropFinished(ctx, id, it.Entry.Name, d)
	case *doomed:
		if d.leftover {
			_, err := s.dropTreeObjects(ctx, id)
			return err
		}
		if err := s.dropPartial(ctx, id, d.pi); err != nil {
			return err
		}
	}
	return s.dropMultiparts(ctx, id)
}
