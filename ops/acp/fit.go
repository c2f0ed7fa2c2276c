package acp

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	_ "image/gif" // header decoders for the decodable check; shrink registers the same ones
	_ "image/jpeg"
	_ "image/png"

	_ "golang.org/x/image/webp"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/shrink"
)

// Shrink to fit (docs/resolve.md). An image the model would refuse for its pixels or bytes (its
// side limit, the side limit of a request with many images, its per-image bytes, --inline-max)
// is shrunk by the shrink package's rules to the model's limits and sent inline; the upload stays
// as it is, on disk. Shrunk copies are cached as `shrink` caches them (named by the source's
// BLAKE3 and the limits), so a second resolve of the same prompt decodes nothing.

// ShrinkOptions turn on shrinking to fit (Options.Shrink). Dir "" leaves it off: an image over a
// limit goes by path.
type ShrinkOptions struct {
	Dir       string // the shrink cache ($XDG_CACHE_HOME/attachctl/shrink)
	MaxMemory int64  // bounds the decodes running at once, as shrink's --max-memory
	MaxPixels int64  // images with more pixels (by their header) are not decoded
	// Off says the user asked for no shrinking (--no-shrink): the reasons say so.
	Off bool
}

// DefaultFitMaxPixels is resolve's --max-pixels: higher than shrink's own default, since the
// memory budget (--max-memory) bounds what a decode holds and a camera or a screenshot of a
// large display passes 50 megapixels.
const DefaultFitMaxPixels = 200_000_000

// fitted is the shrunk copy an inline image's data is read from.
type fitted struct {
	path, mime, blake3 string
	size               int64
	width, height      int
	action, why        string // shrink's action (resized, reencoded) and reason
	cached             bool   // found in the cache, not made by this run
}

// Fit is what became of an image shrunk to fit, for the text that names it: from what (the
// upload, as it is on disk) to what (the copy sent inline), and where that copy is.
type Fit struct {
	FromWidth, FromHeight, ToWidth, ToHeight int
	FromSize, ToSize                         int64
	FromMime, ToMime                         string
	Path                                     string // the shrunk copy in the cache
	Cached                                   bool   // it was there already
}

// fit reports how r was shrunk to fit, nil when its data is the upload's own bytes.
func (r *ref) fit() *Fit {
	f := r.fitted
	if f == nil {
		return nil
	}
	return &Fit{FromWidth: r.width, FromHeight: r.height, ToWidth: f.width, ToHeight: f.height,
		FromSize: r.size, ToSize: f.size, FromMime: r.mime, ToMime: f.mime, Path: f.path, Cached: f.cached}
}

// dataSize, dataMime and dataDims are what an inline block of r carries and what every budget
// counts: the shrunk copy's when there is one, else the upload's.
func (r *ref) dataSize() int64 {
	if r.fitted != nil {
		return r.fitted.size
	}
	return r.size
}

func (r *ref) dataMime() string {
	if r.fitted != nil {
		return r.fitted.mime
	}
	return r.mime
}

func (r *ref) dataDims() (int, int) {
	if r.fitted != nil {
		return r.fitted.width, r.fitted.height
	}
	return r.width, r.height
}

// dataBlake3 is the BLAKE3 the inline data must hash to.
func (r *ref) dataBlake3() string {
	if r.fitted != nil {
		return r.fitted.blake3
	}
	return r.blake3
}

// checkHeader decodes the header of an image from head (its first bytes): an image goes inline
// only when its header parses to a pixel size, since a provider refuses a whole request over
// one image it cannot decode. It sets r.width and r.height from the header when they parse.
func (r *ref) checkHeader(head []byte) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(head))
	switch {
	case err == nil && cfg.Width > 0 && cfg.Height > 0:
		r.width, r.height, r.undecodable = cfg.Width, cfg.Height, ""
	case err == nil:
		r.undecodable = fmt.Sprintf("its header gives no pixel size (%d×%d)", cfg.Width, cfg.Height)
	default:
		why, _, _ := strings.Cut(err.Error(), "\n")
		r.undecodable = "its header does not parse (" + why + ")"
	}
}

// longHead is how much of an image the header check reads when its first headSize bytes end
// before the header does (a JPEG with large EXIF or colour profile segments).
const longHead = 1 << 20

// recheckHeader reads up to longHead bytes of r and checks its header again, when the first
// headSize bytes did not settle it.
func recheckHeader(u Uploads, r *ref) error {
	if r.undecodable == "" || r.size <= headSize {
		return nil
	}
	rc, err := openSource(u, r)
	if err != nil {
		return err
	}
	defer rc.Close()
	head, err := io.ReadAll(io.LimitReader(rc, longHead))
	if err != nil {
		return fault.Errorf(fault.UploadUnreadable, "upload %s: %s: %v", r.id, r.label(), err)
	}
	r.checkHeader(head)
	return nil
}

// openSource opens r's upload (or its file inside a folder upload) through the store.
func openSource(u Uploads, r *ref) (io.ReadCloser, error) {
	if r.parent != nil {
		return r.parent.folder.Open(r.rel)
	}
	if r.of != nil {
		return openDerived(r.path, r.size, r.blake3, "its page rendered")
	}
	return u.Open(r.id, r.name)
}

// reasonUndecodable is why an image whose header does not parse went by path.
func reasonUndecodable(r *ref) string {
	return r.undecodable + ": a model could not decode it"
}

// fitLimits are the side and bytes the model (and --inline-max) allow an image in a request of
// images inline images: maxSide 0 is no limit.
func fitLimits(opts Options, images int) (maxSide int, maxBytes int64) {
	maxBytes = opts.InlineMax
	if m := opts.Model; m != nil {
		if m.MaxImageBytes > 0 {
			maxBytes = min(maxBytes, m.MaxImageBytes)
		}
		maxSide = m.MaxSide
		if m.ManyImages > 0 && images > m.ManyImages && m.MaxSideMany > 0 {
			maxSide = m.MaxSideMany
		}
	}
	return maxSide, maxBytes
}

// candidate reports whether every layer but the size limits would take image r inline: the
// protocol, the adapter, the model's formats and animation, and a header that parses.
func (r *ref) candidate(opts Options) bool {
	if !r.image || !opts.Caps.Image || r.undecodable != "" {
		return false
	}
	if a := opts.Adapter; a != nil && !a.Passes.Image {
		return false
	}
	if m := opts.Model; m != nil && (!slices.Contains(m.Images, r.mime) || r.animated && !m.Animated) {
		return false
	}
	return true
}

// fitAll checks the header of every image that the first headSize bytes did not settle, then
// shrinks each inline candidate over the model's limits (Options.Shrink), at most as many as
// the model takes in one request. A source that is no longer the upload (its BLAKE3) refuses
// the prompt; one that cannot be shrunk keeps its reason and goes by path.
func fitAll(u Uploads, refs []*ref, opts Options) error {
	var errs []error
	for i, err := range eachRef(refs, func(_ int, r *ref) error {
		if !r.image {
			return nil
		}
		return recheckHeader(u, r)
	}) {
		if err != nil {
			errs = append(errs, atBlock(i, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	images := 0
	for _, r := range refs {
		if r != nil && r.candidate(opts) {
			images++
		}
	}
	if m := opts.Model; m != nil && m.MaxImages > 0 {
		images = min(images, m.MaxImages)
	}
	maxSide, maxBytes := fitLimits(opts, images)
	var work []*ref
	n := 0
	for _, r := range refs {
		if r == nil || !r.candidate(opts) {
			continue
		}
		if n++; n > images {
			break // past the model's count: by path whatever its size
		}
		if over := maxSide > 0 && max(r.width, r.height) > maxSide || r.size > maxBytes; !over {
			continue
		}
		switch {
		case opts.Shrink.Off:
			r.fitNote = "not shrunk (--no-shrink)"
		case opts.Shrink.Dir != "":
			work = append(work, r)
		}
	}
	// Decodes are bounded by --max-memory; more at once than processors only adds waiting.
	jobs := max(1, min(runtime.GOMAXPROCS(0), refJobs))
	slots := make(chan struct{}, jobs)
	done := make(chan error, len(work))
	for _, r := range work {
		slots <- struct{}{}
		go func() {
			defer func() { <-slots }()
			done <- shrinkRef(u, r, opts, maxSide, maxBytes)
		}()
	}
	for range work {
		if err := <-done; err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// shrinkRef shrinks image r to maxSide (its long edge) and maxBytes with the shrink package,
// into the shrink cache, and records the copy (r.fitted), or why it could not be (r.fitNote).
func shrinkRef(u Uploads, r *ref, opts Options, maxSide int, maxBytes int64) error {
	so := shrink.Options{MaxEdge: maxSide, MaxBytes: maxBytes, MaxPixels: opts.Shrink.MaxPixels,
		MaxMemory: opts.Shrink.MaxMemory, OutDir: opts.Shrink.Dir}
	if so.MaxEdge <= 0 {
		so.MaxEdge = max(r.width, r.height) // bytes alone: keep its pixels if the bytes allow
	}
	if so.MaxPixels <= 0 {
		so.MaxPixels = DefaultFitMaxPixels
	}
	src, cleanup, err := localSource(u, r, opts.Shrink.Dir)
	if err != nil {
		return err
	}
	defer cleanup()
	// What the cache holds for this source and these limits, before: a result among them is a hit.
	before, _ := filepath.Glob(filepath.Join(opts.Shrink.Dir, fmt.Sprintf("%s.e%d.b%d.*", r.blake3, so.MaxEdge, so.MaxBytes)))
	rec := &manifest.Record{Path: src, Name: r.name, Kind: manifest.KindImage, Mime: r.mime, Blake3: r.blake3,
		Width: r.width, Height: r.height}
	if r.rel != "" {
		rec.Name = filepath.Base(r.rel)
	}
	rec.SetSize(r.size)
	if err := shrink.Record(rec, so); err != nil {
		e := fault.AsError(err, fault.UploadUnreadable)
		return fault.Errorf(fault.UploadUnreadable, "upload %s: %s: shrinking it to fit: %s", r.id, r.label(), e.Message)
	}
	s := rec.Shrink
	switch {
	case s == nil || s.Action == shrink.Kept:
		return nil // within the limits after all: the upload itself
	case s.Action == shrink.AsIs:
		r.fitNote = "shrink could not fit it (" + s.Reason + ")"
		return nil
	}
	r.fitted = &fitted{path: rec.Path, mime: rec.Mime, blake3: rec.Blake3, size: rec.Size,
		width: rec.Width, height: rec.Height, action: s.Action, why: s.Reason,
		cached: slices.Contains(before, rec.Path)}
	return nil
}

// localSource is a path to r's bytes for the shrinker: the store's own file when it has one,
// else a temporary copy in dir, removed by cleanup. shrink checks what it reads against r's
// BLAKE3.
func localSource(u Uploads, r *ref, dir string) (path string, cleanup func(), err error) {
	if r.path != "" {
		return r.path, func() {}, nil
	}
	fail := func(err error) (string, func(), error) {
		return "", nil, fault.Errorf(fault.UploadUnreadable, "upload %s: %s: a copy to shrink: %v", r.id, r.label(), err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fail(err)
	}
	rc, err := openSource(u, r)
	if err != nil {
		return "", nil, err
	}
	defer rc.Close()
	f, err := os.CreateTemp(dir, ".resolve-*.tmp")
	if err != nil {
		return fail(err)
	}
	_, err = io.Copy(f, rc)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return fail(err)
	}
	return f.Name(), func() { os.Remove(f.Name()) }, nil
}

// fitReason is what the model layer says of image r after fitting: its size reason (on the
// shrunk copy's pixels and bytes), with why it was not shrunk when it was not.
func (r *ref) fitReason(m *Model, images int) string {
	why := m.reason(r, images)
	if why != "" && r.fitNote != "" {
		why += "; " + r.fitNote
	}
	return why
}

// explainFit is what --explain adds for an image shrunk to fit.
func (r *ref) explainFit() string {
	f := r.fit()
	if f == nil {
		return ""
	}
	where := "made now in " + f.Path
	if f.Cached {
		where = "reused from the cache " + f.Path
	}
	return fmt.Sprintf("; shrunk to fit from %d×%d %s of %d bytes to %d×%d %s of %d bytes (%s)",
		f.FromWidth, f.FromHeight, f.FromMime, f.FromSize, f.ToWidth, f.ToHeight, f.ToMime, f.ToSize, where)
}

// openFitted opens the copy shrunk to fit that r's inline data is read from; streamBase64 checks
// it against the size and BLAKE3 it had when it was made.
func openFitted(r *ref) (*Upload, error) {
	return openDerived(r.fitted.path, r.fitted.size, r.fitted.blake3, "its copy shrunk to fit")
}

// openDerived opens a file resolve made in the cache (a copy shrunk to fit, a document's page),
// what, for its errors; streamBase64 checks it against the size and BLAKE3 it had when made.
func openDerived(path string, size int64, sum, what string) (*Upload, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fault.Errorf(fault.UploadUnreadable, "%s: %v", what, err)
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fault.Errorf(fault.UploadUnreadable, "%s, %s, is not a regular file", what, path)
	}
	return &Upload{ReadCloser: f, Size: fi.Size(), Blake3: sum, Path: path}, nil
}

// reasonOverRequest is why a file went by path once the request would pass the model's bytes.
func reasonOverRequest(m *Model) string {
	if m == nil || m.MaxRequestBytes == 0 {
		return ""
	}
	return fmt.Sprintf("inline it would pass the %d bytes %s takes in one request", m.MaxRequestBytes, m.Name)
}

// requestLimit is why r, which would make the request size bytes, may not go inline by the
// request's limits: the model's bytes of one request, and --max-tokens for an image given the
// tokens the inline images before it take. "" when it may.
func requestLimit(r *ref, opts Options, size, tokens int64) (layer, reason string) {
	if m := opts.Model; m != nil && m.MaxRequestBytes > 0 && size > m.MaxRequestBytes {
		return layerModel(m), reasonOverRequest(m)
	}
	if opts.MaxTokens > 0 && r.image && tokens+r.tokens(opts.Model) > opts.MaxTokens {
		return layerLimits, reasonOverTokens(opts.MaxTokens)
	}
	return "", ""
}
