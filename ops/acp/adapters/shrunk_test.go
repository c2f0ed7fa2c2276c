//go:build unix

package adapters

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// shrunkLimit is the --inline-max the shrink-to-fit delivery resolves with: the noisy PNG below
// is several times larger, so resolve shrinks it into its cache and sends the copy inline.
const shrunkLimit = "300k"

// noisyPNG is a PNG of random pixels: no encoder makes it small, so it passes shrunkLimit.
func noisyPNG(w, h int) []byte {
	rng := rand.New(rand.NewPCG(29, 29))
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = uint8(rng.IntN(256))
		if i%4 == 3 {
			img.Pix[i] = 255
		}
	}
	var b bytes.Buffer
	png.Encode(&b, img)
	return b.Bytes()
}

// newPrompt opens a new session of the agent and makes the prompt of the uploads in manifest up
// for it, with text.
func newPrompt(t *testing.T, a *agent, bin string, up []byte, cwd, text string) []byte {
	t.Helper()
	sess, err := a.call("session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var s struct{ SessionID string }
	json.Unmarshal(sess, &s)
	return attachctl(t, bin, up, "prompt", "--session", s.SessionID, "--text", text)
}

// deliverShrunk sends the adapter a prompt whose image resolve shrinks to fit, and reports whether
// the shrunk copy's bytes (the one file resolve wrote into its shrink cache) are a payload of the
// model request, and the original's bytes are not.
func deliverShrunk(t *testing.T, a *agent, api *modelAPI, ad adapter, bin, root, cwd string) bool {
	t.Helper()
	in := filepath.Join(root, "shrunk-in")
	os.MkdirAll(in, 0o700)
	src := filepath.Join(in, "big screenshot.png")
	orig := noisyPNG(700, 500)
	if err := os.WriteFile(src, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	store, cache := filepath.Join(root, "shrunk-store"), filepath.Join(root, "cache")
	up := attachctl(t, bin, nil, "upload", "--store", store, src)
	prompt := newPrompt(t, a, bin, up, cwd, "What is in this screenshot?")
	resolved, _ := resolveCached(t, bin, cache, prompt, "--store", store, "--agent", ad.name, "--inline-max", shrunkLimit)
	made, _ := filepath.Glob(filepath.Join(cache, "attachctl", "shrink", "*"))
	if len(made) != 1 {
		t.Fatalf("resolve made %d files in its shrink cache, want the one shrunk copy: %v", len(made), made)
	}
	shrunk, err := os.ReadFile(made[0])
	if err != nil || len(shrunk) == 0 || len(shrunk) > 300_000 {
		t.Fatalf("the shrunk copy %s: %d bytes, %v", made[0], len(shrunk), err)
	}
	api.reset()
	if _, err := a.call("session/prompt", json.RawMessage(resolved), 2*time.Minute); err != nil {
		t.Fatalf("shrunk: %v", err)
	}
	got := collect(api.requests())
	found := false
	for _, p := range got.payloads {
		if bytes.Equal(p, orig) {
			t.Errorf("%s: the original went inline, %d bytes over --inline-max %s", ad.name, len(orig), shrunkLimit)
		}
		found = found || bytes.Equal(p, shrunk)
	}
	if !found {
		t.Errorf("%s: the shrunk copy's %d bytes are not a payload of the model request (%d payloads; resolved prompt starts %.300s)",
			ad.name, len(shrunk), len(got.payloads), strings.TrimSpace(string(resolved)))
	}
	return found
}

// resolveCached resolves prompt with args, its caches (shrink's, documents') under cache, and
// returns the resolved prompt and what resolve said on standard error.
func resolveCached(t *testing.T, bin, cache string, prompt []byte, args ...string) ([]byte, string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"resolve"}, args...)...)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache)
	cmd.Stdin = bytes.NewReader(prompt)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	resolved, err := cmd.Output()
	if err != nil {
		t.Fatalf("resolve: %v\n%s", err, errb.String())
	}
	return resolved, errb.String()
}
