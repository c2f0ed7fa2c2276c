package acp

import (
	"fmt"
	"math"
)

// Token estimates (docs/resolve.md): what an inline image costs in input tokens, by the formula
// each provider publishes for the model family its adapter drives. They are estimates: a
// provider may change its rule, and a model may resize before it counts.

// tokenRules are the estimates by model profile.
var tokenRules = map[string]func(w, h int) int64{
	"anthropic": anthropicTokens,
	"openai":    openAITiles(70, 140), // the GPT-5 family, which codex drives
	"gemini":    geminiTokens,
}

// ImageTokens estimates the input tokens model m counts for one w×h image; 0 when m has no
// published rule or the size is unknown.
func ImageTokens(m *Model, w, h int) int64 {
	if m == nil || w <= 0 || h <= 0 {
		return 0
	}
	if f := tokenRules[m.Name]; f != nil {
		return f(w, h)
	}
	return 0
}

// anthropicTokens: tokens = width × height / 750, after the API has scaled an image down
// (keeping its aspect) to a long edge of at most 1568 px and about 1600 tokens.
func anthropicTokens(w, h int) int64 {
	const maxEdge, maxTokens = 1568, 1600
	s := math.Min(1, float64(maxEdge)/float64(max(w, h)))
	if px := float64(w) * float64(h) * s * s; px > maxTokens*750 {
		s *= math.Sqrt(maxTokens * 750 / px)
	}
	sw, sh := scaled(w, s), scaled(h, s)
	return int64(math.Round(float64(sw) * float64(sh) / 750))
}

// openAITiles is OpenAI's rule for detail "high" (what an image without a detail gets): scaled
// to fit 2048×2048, then its short side down to 768 px, then base tokens plus tile tokens for
// each 512 px tile that covers it.
func openAITiles(base, tile int64) func(w, h int) int64 {
	return func(w, h int) int64 {
		s := math.Min(1, 2048/float64(max(w, h)))
		if short := float64(min(w, h)) * s; short > 768 {
			s *= 768 / short
		}
		sw, sh := scaled(w, s), scaled(h, s)
		tiles := int64((sw+511)/512) * int64((sh+511)/512)
		return base + tile*tiles
	}
}

// geminiTokens: 258 tokens for an image of at most 384 px both sides; a larger one is cut into
// 768×768 tiles of 258 tokens each.
func geminiTokens(w, h int) int64 {
	if w <= 384 && h <= 384 {
		return 258
	}
	return int64((w+767)/768) * int64((h+767)/768) * 258
}

// scaled is n scaled by s (at most 1), at least 1.
func scaled(n int, s float64) int {
	if s >= 1 {
		return n
	}
	return max(1, int(float64(n)*s))
}

// tokens is the estimate for r's inline data (its shrunk copy when it has one).
func (r *ref) tokens(m *Model) int64 {
	w, h := r.dataDims()
	return ImageTokens(m, w, h)
}

// reasonOverTokens is why an image went by path once the inline images' estimate would pass
// --max-tokens.
func reasonOverTokens(max int64) string {
	return fmt.Sprintf("the inline images' estimated input tokens would pass --max-tokens %d", max)
}

// explainTokens is --explain's line for the request's estimate ("" without a rule).
func (res *Resolution) explainTokens(opts Options) string {
	m := opts.Model
	if m == nil || tokenRules[m.Name] == nil {
		return ""
	}
	n := 0
	for _, r := range res.refs {
		if r != nil && r.mode == inlineImage {
			n++
		}
	}
	docs := ""
	if res.Documents > 0 { // their text counts too: about four bytes a token (docs.go)
		docs = fmt.Sprintf(" and the text of %d documents", res.Documents)
	}
	line := fmt.Sprintf("request: %d inline images%s, about %d input tokens for model %s", n, docs, res.Tokens, m.Name)
	if opts.MaxTokens > 0 {
		line += fmt.Sprintf(" (--max-tokens %d)", opts.MaxTokens)
	}
	return line
}

// explainImageTokens is what --explain adds for an inline image: its estimate.
func explainImageTokens(r *ref, m *Model) string {
	if n := r.tokens(m); n > 0 {
		return fmt.Sprintf("; about %d input tokens", n)
	}
	return ""
}
