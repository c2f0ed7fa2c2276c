package store

import (
	"context"
	"io"
	"time"
)

// OpenCalls are the Backend's calls of a backend that opens its location before each (the local
// store: Opened, OpenSite), written once: embedded in the backend, each checks what it is given,
// opens the location (an upload, Begin or a batch, with create: making or marking the store;
// every other call for reading, which makes nothing) and only then has Calls do its work. What
// a call is given is checked first, as on every backend: an id or a name that is not plain, or a
// BLAKE3 that is not one, is upload.invalid whatever is at the location, and a refused Begin
// makes no store.
type OpenCalls struct {
	// OpenLoc opens the location for this run (create: for an upload); its error is the call's.
	OpenLoc func(create bool) error
	// Calls is the backend's work once the location is open, nothing checked again.
	Calls OpenedCalls
}

// OpenedCalls are a backend's calls run by OpenCalls once its location is open: the Backend's
// (Location and Features excepted, which open nothing), Status's steps, and those of the features
// Pather, Streamer and Batcher.
type OpenedCalls interface {
	StatusBackend
	Pather
	Streamer
	Batcher
	Begin(ctx context.Context, name string, size int64) (string, error)
	Write(ctx context.Context, id string, offset int64, r io.Reader) (int64, error)
	Finish(ctx context.Context, id string, size int64, blake3 string) (*Info, error)
	Abort(ctx context.Context, id string) error
	Open(ctx context.Context, id, name string) (Reader, error)
	List(ctx context.Context) (*Listing, error)
	MarkUsed(ctx context.Context, ids []string, at time.Time) error
	Sweep(ctx context.Context, wait time.Duration, dryRun bool) (Sweeper, error)
}

// Begin checks name and size (CheckBegin), so that a refused upload makes no store, then makes or
// marks the store.
func (o *OpenCalls) Begin(ctx context.Context, name string, size int64) (string, error) {
	if err := CheckBegin(name, size); err != nil {
		return "", err
	}
	if err := o.OpenLoc(true); err != nil {
		return "", err
	}
	return o.Calls.Begin(ctx, name, size)
}

func (o *OpenCalls) Write(ctx context.Context, id string, offset int64, r io.Reader) (int64, error) {
	if err := o.openFor(id); err != nil {
		return 0, err
	}
	return o.Calls.Write(ctx, id, offset, r)
}

// Status is StatusOf over Calls, the store opened once for both of its looks.
func (o *OpenCalls) Status(ctx context.Context, id string) (*Status, error) {
	if err := o.openFor(id); err != nil {
		return nil, err
	}
	return StatusOf(ctx, o.Calls, id)
}

// Finish checks the id, then the BLAKE3 (as FinishChunks does), before the store is opened.
func (o *OpenCalls) Finish(ctx context.Context, id string, size int64, blake3 string) (*Info, error) {
	if err := ValidID(id); err != nil {
		return nil, err
	}
	if _, err := CheckHex(blake3); err != nil {
		return nil, err
	}
	if err := o.OpenLoc(false); err != nil {
		return nil, err
	}
	return o.Calls.Finish(ctx, id, size, blake3)
}

func (o *OpenCalls) Abort(ctx context.Context, id string) error {
	if err := o.openFor(id); err != nil {
		return err
	}
	return o.Calls.Abort(ctx, id)
}

func (o *OpenCalls) Open(ctx context.Context, id, name string) (Reader, error) {
	if err := ValidID(id); err != nil {
		return nil, err
	}
	if err := ValidName(name); err != nil {
		return nil, err
	}
	if err := o.OpenLoc(false); err != nil {
		return nil, err
	}
	return o.Calls.Open(ctx, id, name)
}

func (o *OpenCalls) Info(ctx context.Context, id string) (*Info, error) {
	if err := o.openFor(id); err != nil {
		return nil, err
	}
	return o.Calls.Info(ctx, id)
}

func (o *OpenCalls) List(ctx context.Context) (*Listing, error) {
	if err := o.OpenLoc(false); err != nil {
		return nil, err
	}
	return o.Calls.List(ctx)
}

// MarkUsed opens the store even for no ids: a location that is not a store is refused all the
// same (the ids are checked by MarkUsedOn, before anything is marked).
func (o *OpenCalls) MarkUsed(ctx context.Context, ids []string, at time.Time) error {
	if err := o.OpenLoc(false); err != nil {
		return err
	}
	return o.Calls.MarkUsed(ctx, ids, at)
}

func (o *OpenCalls) Sweep(ctx context.Context, wait time.Duration, dryRun bool) (Sweeper, error) {
	if err := o.OpenLoc(false); err != nil {
		return nil, err
	}
	return o.Calls.Sweep(ctx, wait, dryRun)
}

// NewBatch starts a group commit (Batcher), making or marking the store.
func (o *OpenCalls) NewBatch(ctx context.Context) (Batch, error) {
	if err := o.OpenLoc(true); err != nil {
		return nil, err
	}
	return o.Calls.NewBatch(ctx)
}

// TreesOpened is TreesOn over b, the location opened by open for each call as Begin opens it for
// an upload (create) and as a read does otherwise.
func TreesOpened(open func(create bool) error, b TreeBackend) TreesOn {
	return func(_ context.Context, create bool) (TreeBackend, error) {
		if err := open(create); err != nil {
			return nil, err
		}
		return b, nil
	}
}

// Stream puts a whole source in (Streamer), making or marking the store.
func (o *OpenCalls) Stream(ctx context.Context, src Source, f SourceFile, opts StreamOptions) (*Info, error) {
	if err := o.OpenLoc(true); err != nil {
		return nil, err
	}
	return o.Calls.Stream(ctx, src, f, opts)
}

// FinishedPath is where a finished upload's bytes are (Pather): "" when the store cannot be
// opened.
func (o *OpenCalls) FinishedPath(id, name string) string {
	if o.OpenLoc(false) != nil {
		return ""
	}
	return o.Calls.FinishedPath(id, name)
}

// openFor checks the upload id, then opens the location for reading.
func (o *OpenCalls) openFor(id string) error {
	if err := ValidID(id); err != nil {
		return err
	}
	return o.OpenLoc(false)
}

// GuardedWhy says what keeps st from being a finished upload's file as the guarded open takes it
// (docs/store.md), the rule of every Open of a store that keeps its uploads as files: one of the
// store's own (OwnFileWhy) of a finished mode (FinishedMode); "" when it is one.
func GuardedWhy(st FileStat) string {
	if why := OwnFileWhy(st); why != "" {
		return why
	}
	if !FinishedMode(st.Perm) {
		return ModeWhy(ReadOnlyMode, st.Perm)
	}
	return ""
}
