package s3

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// Bounds of a lookUpAll page: room for a few objects per id still wanted (an upload and its
// marker, and others' uploads between them), never more than a server gives at once.
var minPage, maxPage = 64, 1000

func pageKeys(wanted int) *int32 { return aws.Int32(int32(min(maxPage, max(minPage, 4*wanted)))) }

// lookUpAll is lookUp of many ids in few listings. Ids are UUIDv7, so the uploads of one prompt,
// made about the same time, sit side by side in the store's key order: one listing of P/ that
// starts just before the first id wanted covers them all, where a listing each would cost a round
// trip each. Each further page starts at the first id not yet seen whole (or inside it, when a
// page ended in its folder), so however far apart the ids lie there are at most two listings per
// id, as with a listing each and a look at the next page.
func (s *Store) lookUpAll(ctx context.Context, ids []string) ([]store.UploadFolder, error) {
	want := map[string]*listed{}
	for _, id := range ids {
		want[id] = new(listed)
	}
	sorted := slices.Sorted(maps.Keys(want))
	root, start := s.root(), s.key(sorted[0]) // sorts just before P/<id>/...
	for i := 0; i < len(sorted); {
		out, err := s.client.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: &s.Bucket, Prefix: &root,
			StartAfter: &start, MaxKeys: pageKeys(len(sorted) - i)})
		if err != nil {
			return nil, s.wrap(fault.UploadUnreadable, "uploads", err)
		}
		last := ""
		for _, o := range out.Contents {
			k := strings.TrimPrefix(aws.ToString(o.Key), root)
			last = k
			id, n, ok := strings.Cut(k, "/")
			if l := want[id]; ok && l != nil {
				l.add(n, o)
			}
		}
		if !aws.ToBool(out.IsTruncated) || last == "" {
			break
		}
		// Every folder before the last key's is whole; the last key's may go on: the next page
		// starts inside it when it is wanted, else just before the next id wanted.
		lastID, _, _ := strings.Cut(last, "/")
		for i < len(sorted) && sorted[i] < lastID {
			i++
		}
		if start = root + last; i < len(sorted) && sorted[i] != lastID {
			start = s.key(sorted[i])
		}
	}
	notes := make([]store.UploadFolder, len(ids))
	for i, id := range ids {
		var err error
		if notes[i], err = store.SettleFolder(ctx, folders{objects{s}}, id, want[id].read()); err != nil {
			return nil, err
		}
	}
	return notes, nil
}

// MarkUsed marks finished uploads used at at: the rules are written once (store.MarkUsedOn) over
// the primitives below. The ids are looked up in few listings (lookUpAll: each must be a finished
// upload whose marker is not a tombstone), then each marker is replaced by a conditional write. A
// write that replaced the marker it read (If-Match) proves the upload was there: a sweep deletes
// only after its tombstone replaced that marker. A marker written where there was none
// (If-None-Match) may follow a sweep that finished meanwhile, so the engine looks at the upload
// once more, and one that is gone loses the marker again (If-Match the marker's own ETag).
func (s *Store) MarkUsed(ctx context.Context, ids []string, at time.Time) error {
	return store.MarkUsedOn(ctx, useBackend{s}, ids, at)
}

// useBackend is the store as a store.UseBackend.
type useBackend struct{ s *Store }

func (u useBackend) UseProperties() store.UseProperties {
	return store.UseProperties{Jobs: 16, Where: u.s.URI}
}

// HoldUses holds nothing (every marker write is conditional): it checks that the prefix is a
// store or empty (store.notStore when it holds something else), even with no id to mark.
func (u useBackend) HoldUses(ctx context.Context, ids []string) (func(), error) {
	if _, err := u.s.checkStore(ctx, false); err != nil {
		return nil, err
	}
	return func() {}, nil
}

func (u useBackend) LookUpUses(ctx context.Context, ids []string) ([]store.UseTarget, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	notes, err := u.s.lookUpAll(ctx, ids)
	if err != nil {
		return nil, err
	}
	ts := make([]store.UseTarget, len(ids))
	for i := range ids {
		name, _ := notes[i].Finished()
		ts[i] = store.UseTarget{Swept: notes[i].Mark.Tombstone, Note: &notes[i], Missing: name == ""}
	}
	return ts, nil
}

// WriteUse replaces the marker as read (store.WriteUseOn); where there was none, the finished
// upload is looked at once more: its object, or a folder upload's listing.
func (u useBackend) WriteUse(ctx context.Context, id string, t *store.UseTarget, at time.Time) (func() error, func(), error) {
	n := t.Note.(*store.UploadFolder)
	return store.WriteUseOn(ctx, objects{u.s}, id, n.Mark, at, func() error {
		_, err := store.FolderInfo(ctx, folders{objects{u.s}}, id, u.s.URI, *n)
		return err
	})
}
