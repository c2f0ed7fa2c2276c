package store

import (
	"context"
	"errors"
)

// The publish of a stream's upload (StreamWrite.Publish) by a backend that finds its finished
// uploads by a FinishedIndex and builds the uploads of a batch for its commit (GroupBatch): the
// local and in-memory stores. Two workers, or two runs, that copied the same file at the same
// time make one upload: an upload of the same bytes and name finished meanwhile, and still intact
// (NameAgain; a damaged one is avoided, and the next looked for), or claimed in the batch by
// another worker (GroupBatch.Build), is named, and this copy dropped. Else the copy is built into
// the batch, published when the batch commits, or published now. What is the backend's: how a
// copy is dropped, built and published.

// CopyWrite is a stream's upload as PublishCopy publishes it: ID, and the build of T for a batch
// (GroupBuilder: BatchBuild builds it for the batch, BatchUnbuild takes it apart when the batch
// kept it out).
type CopyWrite[T any] interface {
	ID() string
	GroupBuilder[T]
	// DropCopy drops this copy: another upload of the same bytes and name is named.
	DropCopy()
	// PublishOwn publishes this upload create-only, named name with BLAKE3 sum. ErrCopyFound: the
	// backend found an upload of the same bytes and name as it published (asked again under a lock
	// of its own, so that of two workers the second finds the first's); it published nothing.
	PublishOwn(sum string) (*Info, error)
}

// ErrCopyFound is PublishOwn's answer when an upload of the same bytes and name is there now.
var ErrCopyFound = errors.New("an upload of the same bytes and name is there")

// CopyPublish is where PublishCopy looks for another upload of the same bytes and name.
type CopyPublish[T any] struct {
	B     StreamBackend  // reads a finished upload back (NameAgain)
	Index *FinishedIndex // the finished uploads by BLAKE3 and name
	From  IndexSource    // what Index reads the store by (nil: nothing)
	Batch Batch          // the stream's (StreamOptions.Batch): a GroupBatch of T, or none
}

// copyBatch is a GroupBatch of T as PublishCopy builds into it.
type copyBatch[T any] interface {
	Build(blake3, name, id string, w GroupBuilder[T]) (string, error)
}

// PublishCopy publishes w, the upload of size bytes named name whose BLAKE3 is sum, by the rules
// above.
func PublishCopy[T any](ctx context.Context, c CopyPublish[T], w CopyWrite[T], name string, size int64, sum string) (*Info, error) {
	named := func(id string) *Info { return &Info{ID: id, Name: name, Size: size, Blake3: sum} }
	avoid := ""
	for {
		if id := c.Index.Find(c.From, sum, name, avoid); id != "" {
			if NameAgain(ctx, c.B, id, name, sum) {
				w.DropCopy() // a copy of an upload that is finished: nothing to keep
				return named(id), nil
			}
			avoid = id
			continue
		}
		if b, ok := c.Batch.(copyBatch[T]); ok {
			id, err := b.Build(sum, name, w.ID(), w)
			if err != nil {
				return nil, err
			}
			if id != w.ID() {
				w.DropCopy() // claimed by another worker of the batch
			}
			return named(id), nil
		}
		info, err := w.PublishOwn(sum)
		if !errors.Is(err, ErrCopyFound) {
			return info, err
		}
	}
}
