//go:build unix

package local

import (
	"github.com/attachctl/attachctl/ops/store"
)

// batchMax is how many uploads built in partials of their own a Batch holds before it commits
// them: each holds its partial's lock and two descriptors until then. A small upload built in the
// staging partial (batch_small.go) where syncfs commits holds none, and counts an eighth:
// batchFull is the weight at which a batch commits on its own.
const (
	batchMax  = 64
	batchFull = 8 * batchMax
)

// weight is what o counts towards batchFull.
func (o *out) weight() int {
	if o.p == nil && !fileSyncEach {
		return 1
	}
	return batchFull / batchMax
}

// syncWidth is how many uploads of a commit are fsynced at once (each is three fsyncs).
const syncWidth = 8

// A groupBatch is the local store's Batch: the group commit of store.GroupBatch over the uploads
// built here. An upload streamed with it (Stream, opts.Batch) is copied, hashed and built, its
// finished folder ready inside its own partial (which stays locked) or the batch's staging
// partial, but not made durable or placed; a commit makes the built uploads durable at once,
// renames each into place and fsyncs the store once: the fsyncs that arrive together share
// journal commits, and the writeback of each file's data was started when it was built. Nothing
// is renamed into place before its data, metadata and folder are durable, so a crash at any point
// leaves partials that resume, or finished uploads, never a half-written one.
type groupBatch struct {
	*store.GroupBatch[*out, *store.StagedMeta]
	s     *localStore
	files store.MetaFiles         // the metadata files made, for their names (BatchJoin)
	stage store.Staging[*partial] // the staging partial of small uploads (batch_small.go)
}

// newBatch starts a batch of uploads into s.
func (s *localStore) newBatch() *groupBatch {
	b := &groupBatch{s: s}
	b.GroupBatch = store.NewGroupBatch[*out, *store.StagedMeta](s, b, batchFull)
	b.BuildsSmall(s.quota, b)
	return b
}

// BatchItem is store.GroupCommitter's: an upload's id and weight.
func (b *groupBatch) BatchItem(o *out) (string, int) { return o.ID, o.weight() }

// BatchJoin writes the staged upload o's metadata line into the commit's pending metadata file
// x (store.MetaFiles.Join; metaindex.go). An upload built in a partial of its own has its own
// .upload.json.
func (b *groupBatch) BatchJoin(x **store.StagedMeta, o *out) error {
	if o.p != nil {
		return nil
	}
	return b.files.Join(x, o.stage.id, o.Meta, o.stage.stagedMeta)
}

// BatchCommit is store.GroupCommitter's: the commit of outs, with the metadata file x of the
// staged ones.
func (b *groupBatch) BatchCommit(outs []*out, x *store.StagedMeta) []error { return commit(outs, x) }

// BatchIdle removes the staging partial once the batch has committed all it holds and nothing
// is being built in it: what is left in it failed, and was reported.
func (b *groupBatch) BatchIdle() { b.stage.Drop(func(p *partial) { p.remove(false) }) }

// commit publishes the built uploads outs (publish is a commit of one) by the order of
// store.CommitOuts, with index the metadata file of the staged ones among them (nil: none;
// metaindex.go). Every partial is closed (unlocked), and every staged upload's file, at the end.
// Where every staged upload failed, the file names no upload of the store: the sweep prunes it.
func commit(outs []*out, index *store.StagedMeta) []error {
	s := outs[0].s
	return store.CommitOuts(outs, index, store.OutCommit[*out]{
		Out: func(o *out) *store.Out { return o.Out },
		// syncfs on Linux; elsewhere each file is fsynced and commitSync then flushes the drive
		// once (macOS's fsync leaves the bytes in the drive's cache).
		Flush: func() (store.OutDir, error) {
			fd, err := s.openDir(lockErr, false)
			if err != nil {
				return nil, err // the metadata file goes with the staging partial, as its uploads do
			}
			return outDir{fd, s.Dir}, wrap(s.Dir, commitSync(fd))
		},
		SyncEach:  fileSyncEach,
		SyncWidth: syncWidth,
		Placed:    func(d store.OutDir) error { return wrap(s.Dir, dirDurable(d.(outDir).fd)) },
		Begin:     func() bool { return s.idx.BeginPlace(s) },
		End:       func() { s.idx.EndPlace(s) },
		Done:      (*out).done,
		Release:   (*out).release,
		Quota:     s.quota,
	})
}

var _ store.Batch = (*groupBatch)(nil)
