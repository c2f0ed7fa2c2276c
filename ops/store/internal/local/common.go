package local

// What the package names on every platform: New's options, and the layout's names and modes. The
// store itself is in the files built for Unix; on Windows New refuses (local_windows.go says why).

import (
	"time"

	"github.com/attachctl/attachctl/ops/store"
)

// Names inside the store.
const (
	InternalDir = store.InternalDir
	MetaName    = store.MetaName
	UsedName    = store.UsedName
	lockName    = "lock"
	sweepLock   = "sweep.lock"
	partialDir  = store.PartialDir
	trashDir    = "trash"
)

// Modes of everything the store creates, whatever the umask (store.DirMode, ...).
const (
	DirMode      = store.DirMode
	FileMode     = store.FileMode
	ReadOnlyMode = store.ReadOnlyMode
)

// Meta is a finished upload's metadata, STORE/<id>/.upload.json.
type Meta = store.Info

// defaultChunk is the largest chunk written at once unless told otherwise: 512 KiB.
const defaultChunk = 512 << 10

// Status is what `upload status` prints.
type Status = store.Status

// markerWait is how long a use waits for the marker lock before it reports store.locked. A sweep
// holds it for one batch at a time, so the wait is short in practice.
var markerWait = 30 * time.Second

// now is the clock of verify's "at"; tests may replace it.
var now = time.Now

// Option is an option of New.
type Option func(*options)

// options are New's options, the same on every platform.
type options struct {
	limitsWait time.Duration
}

// LimitsWait is how long an upload waits for the store's limits lock, held while another upload
// is checked against the store's limits, before it is store.locked (0: store.DefaultLimitsWait).
func LimitsWait(d time.Duration) Option { return func(o *options) { o.limitsWait = d } }
