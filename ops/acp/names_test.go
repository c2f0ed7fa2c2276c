package acp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
)

// 25 screenshots, resolved for each adapter profile (its capabilities, adapter and model layers),
// with and without a work folder: every inline image is preceded by a text block that names it,
// in prompt order, with its path on disk (the store's file or the work folder's copy), and the
// context block lists all 25, marked inline.
func TestResolveNamesInlineImages(t *testing.T) {
	s := testStore(t)
	recs := rsShots(t, s, 25, 3000, "shot%02d.png")
	in := rsPrompt(t, recs, "What changed between these?")
	for _, a := range Adapters {
		for _, work := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/workdir=%v", a.Name, work), func(t *testing.T) {
				opts := Options{Caps: a.Caps, Adapter: a, Model: FindModel(a.Model)}
				if work {
					opts.Workdir = filepath.Join(t.TempDir(), "work")
				}
				res, err := Resolve(in, rsLocal(s), opts)
				if err != nil {
					t.Fatal(err)
				}
				doc := rsOutput(t, res)
				rsValidate(t, doc)
				if res.Inline != 25 {
					t.Fatalf("%d inline, want 25", res.Inline)
				}
				all := rsAllBlocks(t, doc)
				k := 0
				for i, b := range all {
					if b.Type != "image" {
						continue
					}
					r := recs[k]
					disk := r.Upload.Path
					if work {
						disk = copyPath(opts.Workdir, r.Upload.ID, r.Name)
					}
					want := fmt.Sprintf("Image %s (image/png, 3000 bytes), on disk at %s:", r.Name, disk)
					if i == 0 || all[i-1].Type != "text" || all[i-1].Text != want {
						t.Fatalf("image %d is not preceded by %q: %+v", k, want, all[max(i-1, 0)])
					}
					if got, err := os.ReadFile(disk); err != nil || !bytes.Equal(got, rsDecode(t, b.Data)) {
						t.Fatalf("image %d: the path named is not its file: %v", k, err)
					}
					k++
				}
				if k != 25 {
					t.Fatalf("%d images named, want 25", k)
				}
				ctx := all[len(all)-1].Text
				if n := strings.Count(ctx, ": inline in this prompt too"); n != 25 || res.ContextListed != 25 {
					t.Fatalf("the context block marks %d inline, lists %d; want 25:\n%s", n, res.ContextListed, ctx)
				}
			})
		}
	}
}

func rsDecode(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Files of a folder walked with --each carry their rel through the prompt: their links are
// named by it (a/doc.go and b/doc.go, not two doc.go), and an inline image's name block says it.
func TestResolveEachRel(t *testing.T) {
	s := testStore(t)
	a := rsPut(t, s, "doc.go", "text/plain", []byte("package a\n"))
	b := rsPut(t, s, "doc.go", "text/plain", []byte("package b\n"))
	img := rsPut(t, s, "shot.png", "image/png", rsPNG(t, 3000, 1))
	a.Rel, b.Rel, img.Rel = "a/doc.go", "b/doc.go", "b/img/shot.png"
	in := rsPrompt(t, []*manifest.Record{a, b, img}, "look")
	if !bytes.Contains(in, []byte(`"rel":"a/doc.go"`)) {
		t.Fatalf("the prompt does not carry rel: %s", in)
	}
	res, err := Resolve(in, rsLocal(s), Options{Caps: Caps{Image: true}})
	if err != nil {
		t.Fatal(err)
	}
	doc := rsOutput(t, res)
	rsValidate(t, doc)
	all := rsAllBlocks(t, doc)
	if all[1].Name != "a/doc.go" || all[2].Name != "b/doc.go" {
		t.Fatalf("link names %q and %q, want a/doc.go and b/doc.go", all[1].Name, all[2].Name)
	}
	if want := "Image b/img/shot.png (image/png, 3000 bytes), on disk at " + img.Upload.Path + ":"; all[3].Text != want {
		t.Fatalf("name block %q, want %q", all[3].Text, want)
	}
	// gemini-cli, fed by-path files as text beside inline images, reads their rel there too.
	gem := FindAdapter("gemini-cli")
	res2, err := Resolve(in, rsLocal(s), Options{Caps: gem.Caps, Adapter: gem})
	if err != nil {
		t.Fatal(err)
	}
	g := rsAllBlocks(t, rsOutput(t, res2))
	if !strings.HasPrefix(g[1].Text, "Attached file a/doc.go, on disk at "+a.Upload.Path) || !strings.HasPrefix(g[2].Text, "Attached file b/doc.go, on disk at ") {
		t.Fatalf("gemini-cli's text blocks %q and %q do not name a/doc.go and b/doc.go", g[1].Text, g[2].Text)
	}
	// Resolving the output again changes nothing.
	res, err = Resolve(doc, rsLocal(s), Options{Caps: Caps{Image: true}})
	if err != nil || !bytes.Equal(rsOutput(t, res), doc) {
		t.Fatalf("the second resolve changed the output: %v", err)
	}

	// A rel that is not a relative path of plain names is refused, by prompt and by resolve.
	for _, bad := range []string{"../x", "/abs", "a//b", "a/./b", "a/\x00"} {
		r := *a
		r.Rel = bad
		if _, err := ReferenceBlock(&r); fault.CodeOf(err) != fault.UploadInvalid {
			t.Errorf("prompt: rel %q: %v, want upload.invalid", bad, err)
		}
		q, _ := json.Marshal(bad)
		raw := strings.Replace(string(in), `"rel":"a/doc.go"`, `"rel":`+string(q), 1)
		if _, err := Resolve([]byte(raw), rsLocal(s), Options{}); fault.CodeOf(err) != fault.UploadInvalid {
			t.Errorf("resolve: rel %q: %v, want upload.invalid", bad, err)
		}
	}
	for _, bad := range []string{`"rel":7`, `"Rel":"a/doc.go"`} { // not a string; the key in another case
		raw := strings.Replace(string(in), `"rel":"a/doc.go"`, bad, 1)
		if _, err := Resolve([]byte(raw), rsLocal(s), Options{}); fault.CodeOf(err) != fault.UploadInvalid {
			t.Errorf("resolve: %s: %v, want upload.invalid", bad, err)
		}
	}
}

// A 400-file --each prompt of source files an agent without embeddedContext takes by path: the
// reason they share stands once in the context block, at the head of their lines, not 400 times.
func TestResolveSharedReasonOnce(t *testing.T) {
	s := testStore(t)
	var recs []*manifest.Record
	for i := range 400 {
		r := rsPut(t, s, "doc.go", "text/plain", fmt.Appendf(nil, "package p%d\n", i))
		r.Rel = fmt.Sprintf("pkg%03d/doc.go", i)
		recs = append(recs, r)
	}
	odd := rsPut(t, s, "big.bin", "", rsBytes(100, 1))
	res, err := Resolve(rsPrompt(t, append(recs, odd), "review"), rsLocal(s), Options{Caps: Caps{Image: true}})
	if err != nil {
		t.Fatal(err)
	}
	doc := rsOutput(t, res)
	rsValidate(t, doc)
	all := rsAllBlocks(t, doc)
	ctx := all[len(all)-1].Text
	if n := strings.Count(string(doc), reasonNoEmbedCap); n != 1 || !strings.Contains(ctx, groupHead(400, reasonNoEmbedCap, layerProtocol)) {
		t.Fatalf("the shared reason stands %d times:\n%.2000s", n, ctx)
	}
	if res.ContextListed != 401 || strings.Count(ctx, "\n- ") != 401 {
		t.Fatalf("listed %d, want all 401", res.ContextListed)
	}
	for i, r := range recs {
		if all[1+i].Name != r.Rel || !strings.Contains(ctx, "\n- "+r.Upload.Path+" (") {
			t.Fatalf("file %d: link name %q, or its path not listed", i, all[1+i].Name)
		}
	}
	// What each file's line no longer says: the reason and its layer, 399 times.
	saved := 399 * len(": by path, "+reasonNoEmbedCap+" (protocol)")
	t.Logf("400-file --each prompt: %d bytes (%d bytes of repeated reasons no longer written)", len(doc), saved)
}
