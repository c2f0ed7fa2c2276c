//go:build linux

package acp

// Linux only: the peak is the child's own VmHWM (shrink/rsstest says why).

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops/store/open"
	"github.com/attachctl/attachctl/scripts/docgen"
	"github.com/attachctl/attachctl/shrink/doc"
	"github.com/attachctl/attachctl/shrink/rsstest"
)

// rssChildEnv, when set, makes the test binary the child of BenchmarkHostileDocumentsRSS
// (TestMain): "maxMemory,storeDir,prompt,cacheDir,codeCache".
const rssChildEnv = "ACP_DOCS_RSS_CHILD"

// BenchmarkHostileDocumentsRSS measures the peak RSS of a process that resolves the hostile
// documents of resolve_docs_hostile.txt (a PDF of 10,000 pages, a 200x200-inch page, a .docx
// whose document.xml unzips to 256 MiB, an encrypted PDF, a truncated one) with the real engine,
// as the command does under --max-memory (Go's heap held to 3/4 of it), each alone and all in one
// prompt; and, for the process's own floor (Go, pdfium's compiled code loaded, one instance
// started), a prompt of one small good PDF. Each run is a child process (the test binary) that
// reports its own peak. The peak must stay within --max-memory plus that floor: what the
// documents' decoding holds is within the budget, whatever they are.
func BenchmarkHostileDocumentsRSS(b *testing.B) {
	code := filepath.Join(os.TempDir(), "attachctl-test-wasm")
	doc.SetCodeCache(code)
	if err := doc.Warm(doc.Limits{}); err != nil { // the children load pdfium's compiled code, not compile it
		b.Fatal(err)
	}
	s := testStore(b)
	put := func(name, mime string, data []byte) *manifest.Record { return rsPut(b, s, name, mime, data) }
	const docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	good := put("good.pdf", "application/pdf", docgen.TextPDF([]string{"The good report names the heron, the bridge and the marmalade."}))
	hostile := map[string]*manifest.Record{
		"many":      put("many.pdf", "application/pdf", docgen.ManyPagesPDF(10000)),
		"huge":      put("huge.pdf", "application/pdf", docgen.HugePagePDF(200)),
		"bomb":      put("bomb.docx", docx, docgen.ZipBombDOCX(256<<20)),
		"encrypted": put("locked.pdf", "application/pdf", docgen.EncryptedPDF()),
		"truncated": put("cut.pdf", "application/pdf", docgen.Truncated(docgen.TextPDF([]string{strings.Repeat("A page cut short. ", 20)}))),
	}
	all := []*manifest.Record{hostile["many"], hostile["huge"], hostile["bomb"], hostile["encrypted"], hostile["truncated"], good}
	dir := b.TempDir()
	prompt := func(name string, recs ...*manifest.Record) string {
		p, err := Prompt(recs, PromptOptions{Session: "s1"})
		if err != nil {
			b.Fatal(err)
		}
		path := filepath.Join(dir, name+".json")
		if err := os.WriteFile(path, p, 0o600); err != nil {
			b.Fatal(err)
		}
		return path
	}
	for _, maxMemory := range []int64{64 << 20, 512 << 20} {
		floor := int64(0)
		b.Run(fmt.Sprintf("max-memory-%dMiB", maxMemory>>20), func(b *testing.B) {
			b.Run("floor-good-pdf", func(b *testing.B) {
				floor = docsChildRSS(b, s.Dir, prompt("good", good), maxMemory, code, 0, "good.pdf (application/pdf): document text")
			})
			for _, name := range []string{"many", "huge", "bomb", "encrypted", "truncated"} {
				b.Run(name, func(b *testing.B) {
					docsChildRSS(b, s.Dir, prompt(name, hostile[name]), maxMemory, code, floor, "by path (document): ")
				})
			}
			b.Run("all-at-once", func(b *testing.B) {
				docsChildRSS(b, s.Dir, prompt("all", all...), maxMemory, code, floor, "by path (document): ")
			})
		})
	}
}

// docsChildRSS runs the child over prompt b.N times (each with a cache of its own: the hostile
// documents are never cached, the good one would be) and reports the highest peak RSS; the
// child's --explain must say want. With floor > 0 the peak must be within maxMemory + floor.
func docsChildRSS(b *testing.B, store, prompt string, maxMemory int64, code string, floor int64, want string) int64 {
	peak := rsstest.ChildPeak(b, func(i int) []string {
		cache := filepath.Join(b.TempDir(), fmt.Sprint("cache", i))
		return []string{fmt.Sprintf("%s=%d,%s,%s,%s,%s", rssChildEnv, maxMemory, store, prompt, cache, code)}
	}, func(stderr string) string {
		if !strings.Contains(stderr, want) {
			return fmt.Sprintf("does not say %q", want)
		}
		return ""
	})
	b.ReportMetric(float64(maxMemory)/(1<<20), "max-memory-MiB")
	if floor > 0 {
		b.ReportMetric(float64(floor)/(1<<20), "floor-MiB")
		if peak > maxMemory+floor {
			b.Errorf("peak RSS %d MiB, over --max-memory %d MiB plus the floor of %d MiB", peak>>20, maxMemory>>20, floor>>20)
		}
	}
	return peak
}

// docsRSSChild resolves a prompt as the command does under --max-memory, says on stderr what
// --explain says, and on stdout its peak RSS in KiB; 1 when it failed.
func docsRSSChild(spec string) int {
	f := strings.Split(spec, ",")
	if len(f) != 5 {
		fmt.Fprintln(os.Stderr, "child: bad spec", spec)
		return 1
	}
	maxMemory, _ := strconv.ParseInt(f[0], 10, 64)
	debug.SetMemoryLimit(maxMemory / 4 * 3) // as cmd/attachctl's limitHeap
	doc.SetCodeCache(f[4])
	b, err := open.Store(context.Background(), f[1], open.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	input, err := os.ReadFile(f[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	a := FindAdapter("claude-agent-acp")
	opts := Options{Caps: a.Caps, Adapter: a, Model: FindModel(a.Model),
		Shrink: ShrinkOptions{Dir: f[3], MaxMemory: maxMemory, MaxPixels: DefaultFitMaxPixels}}
	res, err := Resolve(input, rsLocal(&localStore{b: b, Dir: f[1]}), opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := res.WriteTo(io.Discard); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintln(os.Stderr, strings.Join(res.Explain(opts), "\n"))
	if err := rsstest.PrintPeak(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(rssChildEnv); spec != "" {
		os.Exit(docsRSSChild(spec))
	}
	os.Exit(m.Run())
}
