package acp

import (
	"fmt"
	"slices"
	"strings"

	"github.com/attachctl/attachctl/manifest"
)

// Capabilities come in three layers (docs/resolve.md): the protocol (what the agent's initialize
// says, Options.Caps), the adapter (what a known ACP adapter really passes on to its model, and
// how it must be fed so that nothing is dropped) and the model (what the provider's API takes
// inline). A file goes inline only where all three take it; otherwise by path, with the layer and
// the reason in the context block. docs/resolve.md lists each profile's facts with their sources.

// Adapter is what a published ACP adapter does with a prompt, as measured against it.
type Adapter struct {
	// Name is the profile's name, for --agent and the context block.
	Name string
	// Names are the agentInfo names (initialize) that select the profile.
	Names []string
	// Caps are the promptCapabilities its own initialize response advertises (the protocol
	// layer), measured against Version: --agent NAME alone resolves as --initialize with that
	// response does (docs/resolve.md).
	Caps    Caps
	Version string
	// Passes is what it hands on to the model of what ACP carries: an image, audio or embedded
	// block it does not pass on is dropped on the way.
	Passes Caps
	// Model is the model profile of the provider it speaks to.
	Model string
	// RawURIs: it opens a file:// link itself, taking the uri minus "file://" without
	// percent-decoding, so its links carry the path as it is.
	RawURIs bool
	// NoLinksWithMedia: a prompt that holds any link or resource block loses every image and
	// audio block, so when media go inline the by-path files go as text blocks naming their
	// paths, not as links.
	NoLinksWithMedia bool
	// Reads are the document formats (shrink/doc's names) it reads itself from a link and sends
	// its model as the file: such a document goes by path, not as its text and pages.
	Reads []string
}

// Adapters are the known adapter profiles.
var Adapters = []*Adapter{
	{
		// claude-agent-acp 0.23: image blocks become base64 image parts, a resource's text
		// becomes a <context> block; audio blocks and resource blobs are dropped (its source says
		// so); resource_link becomes the text [@name](uri), the uri not decoded.
		Name:    "claude-agent-acp",
		Names:   []string{"@zed-industries/claude-agent-acp", "claude-agent-acp", "@zed-industries/claude-code-acp", "claude-code-acp"},
		Caps:    Caps{Image: true, EmbeddedContext: true},
		Version: "0.23.1",
		Passes:  Caps{Image: true, EmbeddedContext: true},
		Model:   "anthropic",
	},
	{
		// codex-acp 0.16: image blocks become input_image parts, links [@name](uri) text; it
		// takes no audio (its initialize says audio: false).
		Name:    "codex-acp",
		Names:   []string{"codex-acp", "@zed-industries/codex-acp"},
		Caps:    Caps{Image: true, EmbeddedContext: true},
		Version: "0.16.0",
		Passes:  Caps{Image: true, EmbeddedContext: true},
		Model:   "openai",
	},
	{
		// gemini-cli 0.61 --acp: reads file:// links itself (uri minus file://, no decoding);
		// once a prompt holds a link or a resource it rebuilds the message from text and file
		// parts and drops every image and audio block.
		Name:             "gemini-cli",
		Names:            []string{"gemini-cli", "@google/gemini-cli"},
		Caps:             Caps{Image: true, Audio: true, EmbeddedContext: true},
		Version:          "0.61.0",
		Passes:           Caps{Image: true, Audio: true},
		Model:            "gemini",
		RawURIs:          true,
		NoLinksWithMedia: true,
		// It sends a linked PDF to Gemini as inlineData (measured by the adapter suite); other
		// documents it skips as binary.
		Reads: []string{"pdf"},
	},
}

// FindAdapter is the adapter profile of an agent: by a profile name (--agent) or an agentInfo
// name (initialize); nil for an agent no profile knows, which gets the protocol layer alone.
func FindAdapter(name string) *Adapter {
	for _, a := range Adapters {
		if name == a.Name || slices.Contains(a.Names, name) {
			return a
		}
	}
	return nil
}

// Model is what a provider's API takes inline in one request.
type Model struct {
	Name string
	// Images are the image types it takes inline.
	Images []string
	// Audio are the audio types it takes inline (none: audio goes by path).
	Audio []string
	// MaxSide is the most pixels an image may have on a side (0: no limit); with more than
	// ManyImages images in the request, MaxSideMany.
	MaxSide, ManyImages, MaxSideMany int
	// MaxImageBytes is the largest image it takes, in bytes of the file (0: no limit of its own).
	MaxImageBytes int64
	// Animated says whether it takes animated images.
	Animated bool
	// MaxImages is the most images one request may carry (0: no limit).
	MaxImages int
	// MaxRequestBytes is the most bytes one request may carry, inline data as base64 (0: no
	// limit); the resolved prompt's bytes stand for it.
	MaxRequestBytes int64
	// PageEdge is the long edge a document's page is rendered at for it: the size its provider
	// scales an image to before reading it (docs.go).
	PageEdge int
}

// Models are the known model profiles.
var Models = []*Model{
	{Name: "anthropic", Images: []string{"image/png", "image/jpeg", "image/gif", "image/webp"},
		MaxSide: 8000, ManyImages: 20, MaxSideMany: 2000, MaxImageBytes: 3932160, Animated: true, MaxImages: 100,
		MaxRequestBytes: 32_000_000, PageEdge: 1568},
	{Name: "openai", Images: []string{"image/png", "image/jpeg", "image/gif", "image/webp"},
		MaxImageBytes: 20 << 20, Animated: false, MaxImages: 500, MaxRequestBytes: 50_000_000, PageEdge: 2048},
	// Gemini: 100 MB inline in one request since January 2026 (docs/resolve.md), images included.
	{Name: "gemini", Images: []string{"image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"},
		Audio:         []string{"audio/wav", "audio/x-wav", "audio/mpeg", "audio/aiff", "audio/aac", "audio/ogg", "audio/flac"},
		MaxImageBytes: 100_000_000, Animated: false, MaxImages: 3600, MaxRequestBytes: 100_000_000, PageEdge: 1536},
}

// FindModel is the model profile named name, nil when none is.
func FindModel(name string) *Model {
	for _, m := range Models {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// ProfileNames lists the profiles' names, for a usage message.
func ProfileNames() (adapters, models string) {
	var a, m []string
	for _, p := range Adapters {
		a = append(a, p.Name)
	}
	for _, p := range Models {
		m = append(m, p.Name)
	}
	return strings.Join(a, ", "), strings.Join(m, ", ")
}

// Layers name who decided how a file goes, in --explain and the context block.
const (
	layerProtocol = "protocol"
	layerLimits   = "limits" // resolve's own: --inline-max, --inline-budget, --max-message, --embed-max
	layerFormat   = "format" // not a kind that goes inline at all
)

func layerAdapter(a *Adapter) string { return "adapter " + a.Name }
func layerModel(m *Model) string     { return "model " + m.Name }

// modelReason is why model m does not take r inline ("" when it does), given how many images
// the prompt would send inline.
func (m *Model) reason(r *ref, images int) string {
	switch {
	case r.image && !slices.Contains(m.Images, r.mime):
		return fmt.Sprintf("%s takes no %s inline", m.Name, r.mime)
	case !r.image && !slices.Contains(m.Audio, baseMime(r.mime)):
		return fmt.Sprintf("%s takes no %s audio inline", m.Name, baseMime(r.mime))
	case !r.image:
		return ""
	case r.animated && !m.Animated:
		return fmt.Sprintf("an animated image, and %s takes none inline", m.Name)
	case m.MaxImageBytes > 0 && r.dataSize() > m.MaxImageBytes:
		return fmt.Sprintf("%d bytes, more than the %d bytes %s takes in one image", r.dataSize(), m.MaxImageBytes, m.Name)
	}
	w, h := r.dataDims()
	side := max(w, h)
	if m.ManyImages > 0 && images > m.ManyImages && side > m.MaxSideMany {
		return fmt.Sprintf("%d×%d px, more than the %d px a side %s takes when a request has more than %d images", w, h, m.MaxSideMany, m.Name, m.ManyImages)
	}
	if m.MaxSide > 0 && side > m.MaxSide {
		return fmt.Sprintf("%d×%d px, more than the %d px a side %s takes", w, h, m.MaxSide, m.Name)
	}
	return ""
}

// Explain says, one line per reference in prompt order, how its file went and which layer
// decided: "block 2: shot.png (image/png 9000×6000): by path: model anthropic: …". It is for
// people (resolve --explain prints it on standard error); the names are quoted as every name
// for people is.
func (res *Resolution) Explain(opts Options) []string {
	var lines []string
	layers := layerProtocol
	if opts.Adapter != nil {
		layers += ", " + layerAdapter(opts.Adapter)
	}
	if opts.Model != nil {
		layers += ", " + layerModel(opts.Model)
	}
	for i, r := range res.refs {
		if r == nil {
			continue
		}
		name := manifest.Quote(r.label())
		if r.parent != nil {
			name += " in the folder"
		}
		what := r.mime
		if r.width > 0 {
			what += fmt.Sprintf(" %d×%d", r.width, r.height)
		}
		if r.animated {
			what += " animated"
		}
		var how string
		switch {
		case r.mode == inlineImage:
			how = "inline image: " + layers + " and the limits take it" + r.explainFit() + explainImageTokens(r, opts.Model)
		case r.mode == inlineAudio:
			how = "inline audio: " + layers + " and the limits take it"
		case r.mode == embedText:
			how = "embedded text: " + layers + " and the limits take it"
		case r.mode == docText:
			how = r.explainDoc()
		case r.doc != nil && r.reason == "" && len(r.doc.images) > 0:
			how = "by path, it has no text layer" + explainPages(r.doc)
		case r.reason == "" && r.doc != nil && r.doc.info.Reason == "" && !r.doc.reads:
			how = "by path: its text is empty"
		case r.reason == "":
			how = fmt.Sprintf("by path (%s): no layer takes a %s file inline", layerFormat, r.kind)
		case r.parent != nil:
			how = fmt.Sprintf("in the folder by path (%s): %s", r.layer, r.reason)
		default:
			how = fmt.Sprintf("by path (%s): %s", r.layer, r.reason)
		}
		if _, ok := res.textPaths[i]; ok {
			how += "; named in a text block, not a link, so that " + opts.Adapter.Name + " keeps the prompt's images"
		}
		switch r.copy {
		case copyMissing:
			how += "; copied to " + manifest.Quote(r.link)
		case copyIntact:
			how += "; reused its copy " + manifest.Quote(r.link) + " (intact)"
		case copyChanged:
			how += "; its copy " + manifest.Quote(r.link) + " " + changedNote(r)
		}
		lines = append(lines, fmt.Sprintf("block %d: %s (%s): %s", res.inputBlock(i), name, what, how))
	}
	if line := res.explainTokens(opts); line != "" {
		lines = append(lines, line)
	}
	return lines
}
