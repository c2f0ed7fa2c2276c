package store

// Features are what a backend can do beyond Backend's methods, declared once by the backend
// (Backend.Features) where it is made, as restic declares a backend's Properties and tusd's
// composer the extensions of a store: the stages, resolve and the commands read this, and
// nothing asserts a backend's type to find out what it can do. A nil field is an ability the
// backend does not have; the caller then uses Backend's own methods (Begin, Write, Finish for a
// Streamer) or goes without. storetest checks that each backend declares every ability it has.
type Features struct {
	// How records and messages name a finished upload: a path on this machine (the local store),
	// else a URI (S3). At most one of the two.
	Pather Pather
	Namer  Namer

	Exister  Exister  // tells a store that is not there from an empty one
	Limiter  Limiter  // keeps limits (store init)
	Checker  Checker  // rules of its own on an upload's layout, asked first by verify
	Trees    Trees    // keeps folder uploads
	Streamer Streamer // puts a whole source in better than Begin, Write and Finish
	Batcher  Batcher  // publishes many uploads at once
	Moder    Moder    // keeps modes on its uploads' files (says which to restore)

	// Chunk is the chunk an upload sends at once when --chunk is not given (0: the stage's
	// default), LeastChunk the least chunk the backend takes (0: any).
	Chunk, LeastChunk int64
}
