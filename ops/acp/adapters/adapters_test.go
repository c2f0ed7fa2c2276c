//go:build unix

package adapters

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops/store/storetest"
)

// adapterDir is where .ci/run installs the adapters (ATTACHCTL_ADAPTERS overrides it).
func adapterDir(t *testing.T) string {
	dir := os.Getenv("ATTACHCTL_ADAPTERS")
	if dir == "" {
		dir = "../../../.ci/adapters"
	}
	dir, _ = filepath.Abs(dir)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".bin")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the ACP adapters are not installed in %s (.ci/run installs them): %v", dir, err)
		}
		t.Skipf("the ACP adapters are not installed in %s (run: npm ci --prefix .ci/adapters)", dir)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is not on PATH: the adapters need it")
	}
	return dir
}

// adapter is how one published adapter is started and pointed at the fake model API.
type adapter struct {
	name string                               // the profile name
	bin  string                               // under node_modules/.bin
	args []string                             // --acp
	env  func(api, home string) []string      // base URL and a dummy key
	auth string                               // the ACP authenticate method, if it needs one
	prep func(t *testing.T, api, home string) // configuration files in its home
}

var adapters = []adapter{
	{name: "claude-agent-acp", bin: "claude-agent-acp",
		env: func(api, home string) []string {
			return []string{"ANTHROPIC_BASE_URL=" + api, "ANTHROPIC_API_KEY=sk-ant-fake", "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1"}
		}},
	{name: "codex-acp", bin: "codex-acp", auth: "openai-api-key",
		// codex ignores OPENAI_BASE_URL: a provider of its own, in $CODEX_HOME/config.toml.
		env: func(api, home string) []string { return []string{"OPENAI_API_KEY=sk-fake", "CODEX_HOME=" + home} },
		prep: func(t *testing.T, api, home string) {
			config := fmt.Sprintf("model = \"gpt-5\"\nmodel_provider = \"fake\"\n[model_providers.fake]\nname = \"fake\"\nbase_url = %q\nenv_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\n", api+"/v1")
			if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	{name: "gemini-cli", bin: "gemini", args: []string{"--acp"},
		env: func(api, home string) []string {
			return []string{"GOOGLE_GEMINI_BASE_URL=" + api, "GEMINI_API_KEY=fake"}
		},
		prep: func(t *testing.T, api, home string) {
			settings := `{"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false},"general":{"disableAutoUpdate":true}}`
			os.MkdirAll(filepath.Join(home, ".gemini"), 0o700)
			if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(settings), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
}

// file is one of the suite's attachments.
type file struct {
	name string
	data []byte
}

// files are 20 files of every kind people attach, under the names their systems give them.
func files(t *testing.T) []file {
	rng := rand.New(rand.NewPCG(18, 18))
	shot := func(w, h int) []byte { // a flat screenshot: a few colours in blocks
		img := image.NewRGBA(image.Rect(0, 0, w, h))
		c := color.RGBA{uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256)), 255}
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				if (x/16+y/16)%3 == 0 {
					img.Set(x, y, c)
				} else {
					img.Set(x, y, color.White)
				}
			}
		}
		var b bytes.Buffer
		png.Encode(&b, img)
		return b.Bytes()
	}
	photo := func(w, h int) []byte {
		img := image.NewRGBA(image.Rect(0, 0, w, h))
		for i := range img.Pix {
			img.Pix[i] = uint8(rng.IntN(256))
		}
		var b bytes.Buffer
		jpeg.Encode(&b, img, &jpeg.Options{Quality: 80})
		return b.Bytes()
	}
	pdf := func(title string) []byte {
		s, err := os.ReadFile("../../../testdata/samples/document.pdf")
		if err != nil {
			t.Fatal(err)
		}
		return append(s, []byte("% "+title+"\n")...)
	}
	wav := func(n int) []byte {
		b := []byte("RIFF")
		b = binary.LittleEndian.AppendUint32(b, uint32(36+n))
		b = append(b, "WAVEfmt "...)
		b = binary.LittleEndian.AppendUint32(b, 16)
		b = binary.LittleEndian.AppendUint16(b, 1)
		b = binary.LittleEndian.AppendUint16(b, 1)
		b = binary.LittleEndian.AppendUint32(b, 8000)
		b = binary.LittleEndian.AppendUint32(b, 16000)
		b = binary.LittleEndian.AppendUint16(b, 2)
		b = binary.LittleEndian.AppendUint16(b, 16)
		b = append(b, "data"...)
		b = binary.LittleEndian.AppendUint32(b, uint32(n))
		for i := 0; i < n; i++ {
			b = append(b, byte(rng.IntN(256)))
		}
		return b
	}
	var log bytes.Buffer
	for i := 0; log.Len() < 200<<10; i++ {
		fmt.Fprintf(&log, "2026-11-30T10:%02d:%02d.%03dZ INFO request %d served in %d ms from 10.0.%d.%d\n", i/60%60, i%60, i%1000, i, rng.IntN(900), rng.IntN(255), rng.IntN(255))
	}
	return []file{
		{"Screen Shot 2026-11-30 at 10.00.00\u202fAM.png", shot(320, 200)},
		{"Screen Shot 2026-11-30 at 10.00.05\u202fAM.png", shot(300, 180)},
		{"shot #3.png", shot(200, 120)},
		{"diagram 100%.png", shot(160, 160)},
		{"emoji 🎉.png", shot(120, 90)},
		{"photo é.jpg", photo(160, 120)},
		{"照片 中文.jpg", photo(120, 160)},
		{"IMG\u00a01234.jpg", photo(100, 100)},
		{"report.pdf", pdf("report")},
		{"spec é #2.pdf", pdf("spec")},
		{"voice note.wav", wav(4000)},
		{"Recording\u00a02.wav", wav(3000)},
		{"notes.txt", []byte("Notes for the review.\nEverything is fine.\n")},
		{"server.log", log.Bytes()},
		{"line\nbreak.txt", []byte("a file whose name has a newline\n")},
		{"résumé.md", []byte("# Résumé\n\nWork history.\n")},
		{"data #2.csv", []byte("a,b\n1,2\n")},
		{"100% done.txt", []byte("done\n")},
		{"中文 说明.txt", []byte("说明文件\n")},
		{"ideographic\u3000space zw\u200cnj.txt", []byte("spaces\n")},
	}
}

// TestAdapters: every one of 20 files reaches each adapter's model intact, in three ways of
// resolving: --agent with the default caps, --initialize with the adapter's own initialize
// response (captured here over ACP), and that with --workdir; and an image over --inline-max
// arrives as the copy resolve shrank to fit (shrunk_test.go). It records the count of
// deliveries that arrived (180 of 180 for the files, and one shrunk image for each adapter).
func TestAdapters(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the adapter suite runs on Linux (CI)")
	}
	dir := adapterDir(t)
	bin := buildAttachctl(t)
	root := t.TempDir()
	in := filepath.Join(root, "in")
	os.MkdirAll(in, 0o700)
	fs := files(t)
	var paths []string
	for _, f := range fs {
		p := filepath.Join(in, f.name)
		if err := os.WriteFile(p, f.data, 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	var mu sync.Mutex
	total, delivered := 0, 0
	var wg sync.WaitGroup
	for _, ad := range adapters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(ad.name, func(t *testing.T) {
				n, ok := runAdapter(t, ad, dir, bin, filepath.Join(root, ad.name), paths, fs)
				mu.Lock()
				total += n
				delivered += ok
				mu.Unlock()
			})
		}()
	}
	wg.Wait()
	t.Logf("adapter suite: %d of %d deliveries reached the model intact", delivered, total)
}

// runAdapter starts one adapter and sends it the three prompts; it returns how many deliveries
// were checked and how many arrived.
func runAdapter(t *testing.T, ad adapter, dir, bin, root string, paths []string, fs []file) (int, int) {
	home, cwd := filepath.Join(root, "home"), root
	for _, d := range []string{home, cwd} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	api := startModelAPI(t)
	if ad.prep != nil {
		ad.prep(t, api.URL, home)
	}
	env := append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + t.TempDir(), "LANG=C.UTF-8",
		// Anything that would leave loopback goes to a closed loopback port instead.
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=127.0.0.1,localhost"}, ad.env(api.URL, home)...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a := startAgent(t, ctx, env, cwd, filepath.Join(dir, "node_modules", ".bin", ad.bin), ad.args...)
	initResult, err := a.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	initFile := filepath.Join(root, "initialize.json")
	os.WriteFile(initFile, initResult, 0o600)
	if ad.auth != "" {
		if _, err := a.call("authenticate", map[string]any{"methodId": ad.auth}, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	// The files go to a store once; each way of resolving is a new session.
	store := filepath.Join(root, "store")
	up := attachctl(t, bin, nil, append([]string{"upload", "--store", store}, paths...)...)
	checked, arrived := 0, 0
	agentFlag := []string{"--agent", ad.name}
	if help, _ := exec.Command(bin, "resolve", "--help").CombinedOutput(); !bytes.Contains(help, []byte("--agent")) {
		agentFlag = nil // an attachctl from before the adapter layer, measured: default caps alone
	}
	for _, mode := range []struct {
		name  string
		flags []string
	}{
		{"agent", agentFlag},
		{"initialize", []string{"--initialize", initFile}},
		{"workdir", []string{"--initialize", initFile, "--workdir", filepath.Join(root, "work")}},
	} {
		prompt := newPrompt(t, a, bin, up, cwd, "What is in these files?")
		resolved := attachctl(t, bin, prompt, append([]string{"resolve", "--store", store}, mode.flags...)...)
		if mode.name == "agent" && agentFlag != nil {
			// --agent alone is --initialize with the adapter's own response: byte for byte.
			if viaInit := attachctl(t, bin, prompt, "resolve", "--store", store, "--initialize", initFile); !bytes.Equal(resolved, viaInit) {
				t.Errorf("%s: resolve --agent %s differs from resolve --initialize with its own response:\n%.600s\n%.600s", ad.name, ad.name, resolved, viaInit)
			}
		}
		api.reset()
		if _, err := a.call("session/prompt", json.RawMessage(resolved), 2*time.Minute); err != nil {
			t.Fatalf("%s: %v", mode.name, err)
		}
		seen := collect(api.requests())
		var lost []string
		for i, f := range fs {
			checked++
			if why := reached(seen, f, store, filepath.Join(root, "work"), paths[i]); why != "" {
				lost = append(lost, fmt.Sprintf("%s: %s", manifest.Quote(f.name), why))
			} else {
				arrived++
			}
		}
		if len(lost) > 0 {
			t.Errorf("%s, %s: %d of %d files did not reach the model intact:\n  %s", ad.name, mode.name, len(lost), len(fs), strings.Join(lost, "\n  "))
		}
		if agentFlag != nil {
			if unnamed := unnamedInline(seen, fs); len(unnamed) > 0 {
				t.Errorf("%s, %s: %d inline files reached the model with no text naming them: %s", ad.name, mode.name, len(unnamed), strings.Join(unnamed, ", "))
			}
		}
	}
	// An image over the limits, shrunk to fit by resolve: its shrunk copy reaches the model.
	checked++
	if deliverShrunk(t, a, api, ad, bin, root, cwd) {
		arrived++
	}
	// Documents: their text and pages, or the PDF itself for an adapter that reads it.
	n, ok := deliverDocs(t, a, api, ad, bin, root, cwd)
	checked, arrived = checked+n, arrived+ok
	t.Logf("%s: %d of %d deliveries intact", ad.name, arrived, checked)
	return checked, arrived
}

// attachctl runs the binary with stdin and returns its standard output, failing the test on an
// error.
func attachctl(t *testing.T, bin string, stdin []byte, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("attachctl %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out
}

var builtBin storetest.Built

// buildAttachctl builds the attachctl under test (ATTACHCTL_BIN names another, to measure it).
func buildAttachctl(t *testing.T) string {
	if bin := os.Getenv("ATTACHCTL_BIN"); bin != "" {
		return bin
	}
	return builtBin.Get(t, "../../../cmd/attachctl", "attachctl")
}

// seen is what the model was sent: every string of every request, and the bytes of every
// base64 payload (image or file parts).
type seen struct {
	text     []string
	payloads [][]byte
}

func collect(reqs []apiRequest) seen {
	var s seen
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if str, ok := x.(string); ok && (k == "data" || k == "image_url" || k == "url" || k == "file_data") {
					if b := payload(str); b != nil {
						s.payloads = append(s.payloads, b)
					}
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		case string:
			s.text = append(s.text, v)
		}
	}
	for _, r := range reqs {
		var v any
		if json.Unmarshal(r.Body, &v) == nil {
			walk(v)
		}
	}
	return s
}

// payload decodes base64 data, bare or as a data: URL; nil when it is neither.
func payload(s string) []byte {
	if rest, ok := strings.CutPrefix(s, "data:"); ok {
		_, s, _ = strings.Cut(rest, ";base64,")
	}
	if len(s) < 8 {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil
	}
	return b
}

// reached says why f did not reach the model intact, or "": its bytes are a payload of the
// request, or a path the request names (as it is, or quoted where a path must be) is a file
// that holds them.
func reached(s seen, f file, store, work, src string) string {
	for _, p := range s.payloads {
		if bytes.Equal(p, f.data) {
			return ""
		}
	}
	var candidates []string
	for _, root := range []string{store, work} {
		m, _ := filepath.Glob(filepath.Join(root, "*", f.name))
		candidates = append(candidates, m...)
	}
	named := false
	for _, p := range candidates {
		for _, form := range []string{p, manifest.Quote(p)} {
			for _, text := range s.text {
				if strings.Contains(text, form) {
					named = true
					if b, err := os.ReadFile(p); err == nil && bytes.Equal(b, f.data) {
						return ""
					}
				}
			}
		}
	}
	if named {
		return "named by a path whose file is not the upload"
	}
	return "neither its bytes nor a path to it reached the model"
}

// unnamedInline lists the files whose bytes reached the model inline (an image or audio payload)
// but whose name no text of the request gives as resolve writes it before the block: "Image NAME
// (" or "Audio NAME (" (the name quoted where it must be).
func unnamedInline(s seen, fs []file) []string {
	var out []string
	for _, f := range fs {
		inline := false
		for _, p := range s.payloads {
			inline = inline || bytes.Equal(p, f.data)
		}
		if !inline {
			continue
		}
		named := false
		for _, what := range []string{"Image ", "Audio "} {
			for _, text := range s.text {
				named = named || strings.Contains(text, what+f.name+" (") || strings.Contains(text, what+manifest.Quote(f.name)+" (")
			}
		}
		if !named {
			out = append(out, manifest.Quote(f.name))
		}
	}
	return out
}
