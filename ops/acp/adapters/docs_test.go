//go:build unix

package adapters

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/scripts/docgen"
)

// The documents of the suite (docs/resolve.md, "How documents reach each model"): each holds
// known sentences, or (the scan) only pictures of pages.
var (
	docPages = []string{
		"The heron survey counted four hundred and twelve grey herons along the river this spring.",
		"The committee approved the footbridge over the Elbe, to be finished before the autumn fair.",
		"The last page of the report lists marmalade, quince jelly and plum butter as the prizes.",
	}
	docWord  = "The walrus colony on the north beach sleeps through the afternoon, said the ranger's notes."
	docCells = []string{"Invoice 7781 for the lighthouse lamp repair", "paid in full on the ninth of March"}
)

// deliverDocs sends the adapter a prompt of a 3-page text PDF, a 2-page scanned PDF, a .docx and a
// .xlsx, resolved with --agent, and reports how many of the four reached the model as it should
// read them: for an adapter that reads a PDF itself (gemini-cli) the PDFs' bytes as payloads;
// otherwise every known sentence in the request's text, and the scan's pages (as resolve rendered
// them into its cache, or their copies shrunk to fit) as image payloads.
func deliverDocs(t *testing.T, a *agent, api *modelAPI, ad adapter, bin, root, cwd string) (int, int) {
	t.Helper()
	in := filepath.Join(root, "docs-in")
	os.MkdirAll(in, 0o700)
	docs := []file{
		{"quarterly report.pdf", docgen.TextPDF(docPages)},
		{"scanned letter.pdf", docgen.ScanPDF(2)},
		{"ranger notes.docx", docgen.DOCX([]string{docWord})},
		{"invoices.xlsx", docgen.XLSX([][]string{docCells})},
	}
	var paths []string
	for _, f := range docs {
		p := filepath.Join(in, f.name)
		if err := os.WriteFile(p, f.data, 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	store, cache := filepath.Join(root, "docs-store"), filepath.Join(root, "docs-cache")
	up := attachctl(t, bin, nil, append([]string{"upload", "--store", store}, paths...)...)
	prompt := newPrompt(t, a, bin, up, cwd, "What do these documents say?")
	resolved, explain := resolveCached(t, bin, cache, prompt, "--store", store, "--agent", ad.name, "--explain")
	api.reset()
	if _, err := a.call("session/prompt", json.RawMessage(resolved), 2*time.Minute); err != nil {
		t.Fatalf("documents: %v", err)
	}
	got := collect(api.requests())
	text := strings.Join(got.text, "\n")
	payload := func(b []byte) bool {
		for _, p := range got.payloads {
			if bytes.Equal(p, b) {
				return true
			}
		}
		return false
	}
	var lost []string
	sentences := func(name string, want ...string) {
		for _, s := range want {
			if !strings.Contains(text, s) {
				lost = append(lost, fmt.Sprintf("%s: %q is not in the request's text", name, s))
				return
			}
		}
	}
	readsPDF := ad.name == "gemini-cli"
	for _, d := range docs[:2] {
		if readsPDF && !payload(d.data) {
			lost = append(lost, d.name+": the PDF is not a payload of the request")
		}
	}
	if !readsPDF {
		sentences(docs[0].name, docPages...)
		// The scan's pages: files resolve wrote into its cache, whose bytes are payloads.
		made, _ := filepath.Glob(filepath.Join(cache, "attachctl", "shrink", "*"))
		pages := 0
		for _, m := range made {
			if b, err := os.ReadFile(m); err == nil && strings.Contains(m, ".page") && payload(b) {
				pages++
			}
		}
		if pages < 2 {
			// a page shrunk to fit goes as its copy: any cache file's bytes count once
			pages = 0
			for _, m := range made {
				if b, err := os.ReadFile(m); err == nil && payload(b) {
					pages++
				}
			}
		}
		if pages != 2 {
			lost = append(lost, fmt.Sprintf("%s: %d of its 2 pages are image payloads of the request (cache: %v)", docs[1].name, pages, made))
		}
	}
	sentences(docs[2].name, docWord)
	sentences(docs[3].name, docCells...)
	if len(lost) > 0 {
		t.Errorf("%s: documents did not reach the model as it reads them:\n  %s\nresolve --explain:\n%s", ad.name, strings.Join(lost, "\n  "), explain)
	}
	failed := map[string]bool{}
	for _, l := range lost {
		name, _, _ := strings.Cut(l, ":")
		failed[name] = true
	}
	return len(docs), len(docs) - len(failed)
}
