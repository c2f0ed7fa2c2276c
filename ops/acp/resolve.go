package acp

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/sniff"
)

// Defaults of resolve's limits (docs/resolve.md).
const (
	DefaultInlineMax    = 3932160  // 3.75 MiB: the largest image (or audio) that goes inline
	DefaultInlineBudget = 10485760 // 10 MiB: the inline image and audio bytes of one prompt
	DefaultMaxMessage   = 15728640 // 15 MiB: one message, counted over the whole output
	DefaultEmbedMax     = 65536    // 64 KiB: the largest text file embedded as a resource block
)

// Options tune Resolve. Zero limits take the defaults.
type Options struct {
	InlineMax    int64 // an image or audio file larger than this goes by path
	InlineBudget int64 // inline image and audio bytes of the whole prompt, taken in prompt order
	MaxMessage   int64 // bytes of the whole output document, its newline included
	EmbedMax     int64 // a text file larger than this is not embedded
	Caps         Caps
	// Adapter and Model are the adapter and model layers (nil: none, the protocol layer alone).
	Adapter *Adapter
	Model   *Model
	// Workdir, when set, is an absolute folder that every file of the prompt, inline ones too, is
	// copied into (Workdir/<id>/<name>, read-only, checked by BLAKE3): the links and the context
	// block name the copies, never the store's files; a copy the agent changed is kept (see
	// checkWork). A store without local files (Upload.Path "") needs one.
	Workdir string
	// Now is the time the uploads are marked used; zero is time.Now().
	Now time.Time
	// Context, when set, stops the resolve between its steps once it is done (a signal): Resolve
	// then returns its error, having marked nothing used.
	Context context.Context
	// InlineFromFolders, when set, lets the images inside a folder upload go inline under the
	// same layers and limits as any image (folder.go); otherwise a folder goes by path whole.
	InlineFromFolders bool
	// MaxFiles and MaxBytes limit one prompt: how many uploads it names, and their bytes together
	// (each upload once). Zero is no limit. A prompt over one is refused with upload.tooMany.
	MaxFiles, MaxBytes int64
	// Shrink shrinks an image over the model's limits to fit and sends it inline (fit.go); its
	// zero value leaves shrinking off.
	Shrink ShrinkOptions
	// MaxTokens, when set, keeps the inline images' estimated input tokens for the model
	// (tokens.go) within it: later images go by path.
	MaxTokens int64
	// Docs tune how documents (PDF, OOXML, ODT) reach the model (docs.go).
	Docs DocOptions
	// BeforeRecheck, when set, is called once the inline files are checked, before the work folder is
	// checked again and the uploads marked: the tests' hook (cmd/attachctl/testhook.go) to
	// change the work folder at that moment.
	BeforeRecheck func()
}

func (o *Options) defaults() {
	if o.InlineMax <= 0 {
		o.InlineMax = DefaultInlineMax
	}
	if o.InlineBudget <= 0 {
		o.InlineBudget = DefaultInlineBudget
	}
	if o.MaxMessage <= 0 {
		o.MaxMessage = DefaultMaxMessage
	}
	if o.EmbedMax <= 0 {
		o.EmbedMax = DefaultEmbedMax
	}
	if o.Docs.Max <= 0 {
		o.Docs.Max = DefaultDocMax
	}
	if o.Docs.Pages == 0 {
		o.Docs.Pages = DefaultDocPages
	}
	if o.Docs.Timeout <= 0 {
		o.Docs.Timeout = DefaultDocTimeout
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.Context == nil {
		o.Context = context.Background()
	}
}

// Resolution is a resolved prompt, ready to be written by WriteTo.
type Resolution struct {
	// Size is the length of the resolved document in bytes, its newline included: at most one
	// message.
	Size int64
	// IDs are the uploads the prompt names, in prompt order without repeats; all marked used.
	IDs []string
	// Inline, Audio, Embedded and ByPath count the references by how they went.
	Inline, Audio, Embedded, ByPath int
	// ContextListed is how many files the context text block lists: every file of the prompt,
	// inline ones too, unless the message had no room.
	ContextListed int
	// Copied, Reused and Changed count the work folder's copies made, found intact, and found
	// changed by the agent (left as they are) (Options.Workdir).
	Copied, Reused, Changed int
	// Tokens is the inline images' estimated input tokens for the model; Shrunk counts the
	// inline images sent as a copy shrunk to fit.
	Tokens int64
	Shrunk int
	// Documents counts the documents whose text went in the prompt; DocPages, their pages
	// that went inline as images.
	Documents, DocPages int

	textPaths       map[int]bool // blocks whose by-path file went as a text block (Adapter.NoLinksWithMedia)
	u               Uploads
	work            os.FileInfo // the work folder the copies went into (workdir_recheck.go)
	head, tail, ctx []byte      // the document around the prompt array, and the context block
	blocks          []object    // the prompt's blocks as they came
	refs            []*ref      // per block, the reference it names (nil: passes through)
}

// How a reference goes out.
type mode int

const (
	modePath mode = iota
	inlineImage
	inlineAudio
	embedText
	docText // a document's text, as a resource or a text block (docs.go)
)

// ref is one reference block of the prompt.
type ref struct {
	typ    string // image or resource_link
	id     string
	name   string
	rest   object // the block's fields resolve keeps (not modelled), _meta.acpmux.upload removed
	path   string // the finished file on this machine, "" when the store has none
	link   string // the file a by-path link names: path, or the work folder's copy
	size   int64
	blake3 string
	mime   string // sniffed from the content
	kind   string // sniff's kind, from the content
	image  bool   // PNG, JPEG, GIF or WebP by content
	text   []byte // the whole content of a small text file, when embedding is possible
	mode   mode
	reason string          // why a file that could go inline (image, audio, text) went by path
	layer  string          // who decided that: protocol, adapter, model, limits
	uri    string          // the uri of its link
	line   string          // its context line at the longest (plan's reservation)
	out    object          // the resolved block, data excepted
	folder *Folder         // a folder upload (folder.go): by path, its tree in the context block
	images map[string]*ref // a folder's images asked inline, by rel (folderImages)
	parent *ref            // the folder reference an image inside a folder belongs to
	rel    string          // that image's path inside the folder
	each   string          // an --each record's rel, its path in the folder walked (names.go)

	width, height int         // an image's pixels, from its header (0 when the header does not say)
	animated      bool        // an animated image
	copy          copyState   // the work folder's copy, with Options.Workdir
	copyInfo      os.FileInfo // the copy as this run made or checked it (nil: not to be read)
	checked       os.FileInfo // the inline file as verifyInline hashed it (nil: not hashed, or no Stat)
	undecodable   string      // an image whose header does not parse: why (fit.go)
	fitted        *fitted     // the copy shrunk to fit that its inline data is read from
	doc           *docState   // a document delivered as its text and pages (docs.go)
	of            *ref        // the document a rendered page belongs to
	page          int         // that page's number
	fitNote       string      // why an image over the model's limits was not shrunk
}

// Resolve resolves the ACP session/prompt params (or JSON-RPC request carrying them) in input
// against the uploads u, treating the input as untrusted (docs/resolve.md). Every reference is
// checked and opened through u; images within the limits go inline, every other file by path as a
// file:// resource_link, listed in one context text block. Blocks and fields it does not resolve
// pass through as they are.
//
// Input that is not a prompt is a manifest.invalid error. A refused prompt returns an error that
// joins every refusal (each a *fault.Error with its code), marks nothing used and writes
// nothing; a resolved one has marked each upload it names used (and, with a work folder, made
// the copies its links name). A resolve that fails at any step marks nothing used: the marks
// are the last step, after the work folder's copies and after every inline byte is read and
// checked against its BLAKE3 (verify.go).
func Resolve(input []byte, u Uploads, opts Options) (*Resolution, error) {
	opts.defaults()
	doc, err := parseDocument(input)
	if err != nil {
		return nil, err
	}
	blocks, refs, err := checkBlocks(doc.prompt)
	if err != nil {
		return nil, err
	}
	var errs []error
	for i, err := range eachRef(refs, func(_ int, r *ref) error { return examine(u, r, opts) }) {
		if err != nil {
			errs = append(errs, atBlock(i, err))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := promptLimits(refs, opts); err != nil {
		return nil, err
	}
	if opts.Workdir != "" {
		if err := checkWork(opts.Workdir, refs); err != nil {
			return nil, err
		}
	}
	if opts.InlineFromFolders {
		if blocks, refs, err = folderImages(blocks, refs); err != nil {
			return nil, err
		}
	}
	if blocks, refs, err = docsAll(u, blocks, refs, opts); err != nil {
		return nil, err
	}
	if err := fitAll(u, refs, opts); err != nil {
		return nil, err
	}
	if err := opts.Context.Err(); err != nil {
		return nil, err
	}
	res, err := plan(doc, blocks, refs, opts)
	if err != nil {
		return nil, err
	}
	if opts.Workdir != "" {
		if err := res.copyOut(u, opts.Workdir); err != nil {
			return nil, err
		}
	}
	if err := opts.Context.Err(); err != nil {
		return nil, err
	}
	res.u = u
	if err := res.verifyInline(); err != nil { // every inline byte, before any is written
		return nil, err
	}
	if opts.BeforeRecheck != nil {
		opts.BeforeRecheck()
	}
	if err := opts.Context.Err(); err != nil {
		return nil, err
	}
	if opts.Workdir != "" {
		if err := res.recheckWork(opts.Workdir); err != nil {
			return nil, err
		}
	}
	if len(res.IDs) > 0 {
		if err := u.MarkUsed(res.IDs, opts.Now); err != nil {
			return nil, fault.AsError(err, fault.UploadUnreadable)
		}
	}
	return res, nil
}

// refJobs is how many references are examined or copied at once: on a store behind a network
// (S3) each is a round trip to the server, which one after another would add up.
const refJobs = 8

// eachRef runs f on every reference that is not nil, with its index, refJobs at once, and
// returns their errors by index. f may change only its own reference (and what is at its index).
func eachRef(refs []*ref, f func(int, *ref) error) []error {
	return eachIndex(len(refs), func(i int) error {
		if refs[i] == nil {
			return nil
		}
		return f(i, refs[i])
	})
}

// notPrompt is the error for input that is not a session/prompt: exit 2.
func notPrompt(format string, args ...any) error {
	return fault.Errorf(fault.ManifestInvalid, "not an ACP session/prompt: "+format, args...)
}

// atBlock names the prompt block in a refusal.
func atBlock(i int, err error) error {
	e := fault.AsError(err, fault.UploadUnreadable)
	return fault.Errorf(e.Code, "prompt block %d: %s", i, e.Message)
}

func invalid(i int, format string, args ...any) error {
	return fault.Errorf(fault.UploadInvalid, "prompt block %d: "+format, append([]any{i}, args...)...)
}

// headSize is how much of a file type detection looks at.
const headSize = 8 << 10

// examine opens the reference's finished upload and sniffs it: its head, or the whole file when
// it may be embedded.
func examine(u Uploads, r *ref, opts Options) error {
	f, err := u.Open(r.id, r.name)
	if err != nil {
		_, err = examineFolder(u, r, opts, err)
		return err
	}
	defer f.Close()
	r.path, r.size, r.blake3 = f.Path, f.Size, f.Blake3
	r.link = r.path
	if opts.Workdir != "" {
		r.link = copyPath(opts.Workdir, r.id, r.name)
	}
	if r.link == "" {
		return fault.Errorf(fault.UploadUnreadable, "upload %s: the store has no local file to link to: resolve with a work folder (--workdir)", r.id)
	}
	want := min(r.size, headSize)
	embeddable := opts.Caps.EmbeddedContext && r.size <= opts.EmbedMax
	if embeddable {
		want = r.size
	}
	buf := make([]byte, want)
	if _, err := io.ReadFull(f, buf); err != nil {
		if fault.CodeOf(err) != "" {
			return err // the store's own words and code, said once
		}
		return fault.Errorf(fault.UploadUnreadable, "upload %s: %s: %v", r.id, r.name, err)
	}
	r.mime, r.kind = sniff.Content(buf, want == r.size)
	r.image = inlineImageTypes[r.mime]
	if r.image {
		r.width, r.height, _ = sniff.Image(buf[:min(len(buf), headSize)])
		r.animated = sniff.Animated(buf[:min(len(buf), headSize)])
		r.checkHeader(buf[:min(len(buf), headSize)])
	}
	if embeddable && r.kind == manifest.KindText {
		r.text = sniff.DecodeText(buf) // UTF-16 or UTF-32 text is embedded as UTF-8
	}
	return nil
}

// changed is the error for an upload that is no longer the file examine saw.
func changed(r *ref) error {
	return fault.Errorf(fault.UploadUnreadable, "upload %s: %s changed while it was resolved", r.id, r.label())
}
