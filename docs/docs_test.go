// Package docs_test checks the documentation: every relative link of README.md and docs/*.md
// names a file of the repository, and every #anchor a heading of that file, so that a page moved
// or a heading renamed shows here instead of as a dead link.
package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

var (
	fence    = regexp.MustCompile("(?ms)^ *```.*?^ *```")
	codeSpan = regexp.MustCompile("`[^`\n]*`")
	link     = regexp.MustCompile(`\]\(([^()\s]*)\)`)
	heading  = regexp.MustCompile(`(?m)^#{1,6} +(.*?) *#* *$`)
)

// pages are the Markdown files the links are checked in, relative to the repository's root.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("*.md")
	if err != nil || len(docs) < 5 {
		t.Fatalf("docs/*.md: %v, %d files", err, len(docs))
	}
	out := []string{"README.md"}
	for _, d := range docs {
		out = append(out, filepath.Join("docs", d))
	}
	return out
}

// prose is a page without its code blocks and code spans, where a "](...)" is no link.
func prose(text string) string {
	return codeSpan.ReplaceAllString(fence.ReplaceAllString(text, ""), "")
}

// anchors are the ids GitHub gives the headings of a Markdown page.
func anchors(text string) map[string]bool {
	ids := map[string]bool{}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(text, ""), -1) {
		id := slug(m[1])
		if n := seen[id]; n > 0 {
			ids[id+"-"+itoa(n)] = true
		} else {
			ids[id] = true
		}
		seen[id]++
	}
	return ids
}

// slug is GitHub's heading id: lower case, spaces as hyphens, punctuation other than - and _ gone.
func slug(h string) string {
	h = regexp.MustCompile(`\[([^]]*)\]\([^)]*\)`).ReplaceAllString(h, "$1") // a link's text
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func itoa(n int) string {
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

func TestLinksResolve(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, page := range pages(t) {
		body, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(prose(string(body)), -1) {
			target := m[1]
			if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			n++
			file, anchor, _ := strings.Cut(target, "#")
			path := filepath.Join(root, page) // a bare #anchor is on the page itself
			if file != "" {
				path = filepath.Join(filepath.Dir(path), filepath.FromSlash(file))
			}
			if rel, err := filepath.Rel(root, path); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				t.Errorf("%s: link %q leaves the repository (a clone has nothing there)", page, target)
				continue
			}
			info, err := os.Stat(path)
			if err != nil {
				t.Errorf("%s: link %q: %v", page, target, err)
				continue
			}
			if anchor == "" {
				continue
			}
			if info.IsDir() || !strings.HasSuffix(path, ".md") {
				t.Errorf("%s: link %q: an anchor into something that is not a Markdown page", page, target)
				continue
			}
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !anchors(string(text))[anchor] {
				t.Errorf("%s: link %q: %s has no heading with the id %q", page, target, file, anchor)
			}
		}
	}
	if n < 20 {
		t.Errorf("checked %d relative links; the pattern finds too few", n)
	}
}

// The checker itself: what it takes for a link and a heading's id.
func TestLinkChecker(t *testing.T) {
	for h, want := range map[string]string{
		"Pipelines that fail, input from a terminal, signals": "pipelines-that-fail-input-from-a-terminal-signals",
		"sniff `[PATH...]`": "sniff-path",
		"The three capability layers: protocol, adapter, model": "the-three-capability-layers-protocol-adapter-model",
		"Folder uploads on S3":  "folder-uploads-on-s3",
		"Releases and licences": "releases-and-licences",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
	page := "# A\n\n## A\n\nSee [b](b.md#x) and `[c](c.md)`.\n\n```\n[d](d.md)\n```\n"
	if got := link.FindAllStringSubmatch(prose(page), -1); len(got) != 1 || got[0][1] != "b.md#x" {
		t.Errorf("links of the page: %q, want only b.md#x", got)
	}
	if ids := anchors(page); !ids["a"] || !ids["a-1"] {
		t.Errorf("anchors of the page: %v, want a and a-1", ids)
	}
}
