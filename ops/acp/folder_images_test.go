package acp

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	"image/color"
	"image/gif"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/stage"
	"github.com/attachctl/attachctl/sniff"
)

// rsFolder uploads a folder of files (rel -> bytes) as one folder upload, through sniff and the
// upload stage as `attachctl upload DIR` does, and returns its record.
func rsFolder(t *testing.T, s *localStore, name string, files map[string][]byte) *manifest.Record {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	for rel, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rec := &manifest.Record{Path: dir}
	if err := sniff.Fill(rec, sniff.Options{Folders: true}); err != nil {
		t.Fatal(err)
	}
	u, err := stage.NewUploader(s.Backend(), stage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Upload(context.Background(), rec, nil); err != nil {
		t.Fatal(err)
	}
	if rec.Kind != manifest.KindFolder || rec.Upload == nil {
		t.Fatalf("not a folder upload: %+v", rec)
	}
	return rec
}

// rsGIF is a small GIF (16×12).
func rsGIF(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	img := image.NewPaletted(image.Rect(0, 0, 16, 12), color.Palette{color.Black, color.White})
	if err := gif.Encode(&buf, img, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Images inside a folder upload go inline only when asked (InlineFromFolders), and then under the
// same layers as any image: the protocol's capability, the adapter, the model, the inline limit
// and budget. Each one asked is marked in the folder's tree in the context block (inline, or why
// not), --explain says who decided, and the folder's link is there whatever happens to them.
func TestResolveFolderImages(t *testing.T) {
	s := testStore(t)
	png3k, png2k, gf := rsPNG(t, 3000, 1), rsPNG(t, 2000, 2), rsGIF(t)
	rec := rsFolder(t, s, "shots", map[string][]byte{
		"a/one.png": png3k,
		"b.gif":     gf,
		"c.dat":     png2k, // a PNG by its content, whatever its name
		"notes.txt": []byte("not an image\n"),
	})
	in, err := Prompt([]*manifest.Record{rec}, PromptOptions{Session: "s", Text: "look", HasText: true})
	if err != nil {
		t.Fatal(err)
	}
	noImageAdapter := &Adapter{Name: "t-adapter", Passes: Caps{EmbeddedContext: true}}
	pngOnly := &Model{Name: "t-model", Images: []string{"image/png"}}
	type want struct {
		inline []string          // the folder's files inline, in order
		notes  map[string]string // rel: what its tree line says after the size ("" none)
		layer  string            // what --explain names for the ones not inline
	}
	all := []string{"a/one.png", "b.gif", "c.dat"}
	inlineNote := ": inline in this prompt too"
	cases := []struct {
		name string
		opts Options
		want want
	}{
		{"not asked", Options{Caps: Caps{Image: true}},
			want{notes: map[string]string{"a/one.png": "", "b.gif": "", "c.dat": "", "notes.txt": ""}}},
		{"asked", Options{Caps: Caps{Image: true}, InlineFromFolders: true},
			want{inline: all, notes: map[string]string{"a/one.png": inlineNote, "b.gif": inlineNote, "c.dat": inlineNote, "notes.txt": ""}}},
		{"protocol: no image capability", Options{InlineFromFolders: true},
			want{notes: map[string]string{"a/one.png": ": not inline, " + reasonNoImageCap + " (protocol)"}, layer: "(protocol)"}},
		{"adapter passes no image", Options{Caps: Caps{Image: true}, Adapter: noImageAdapter, InlineFromFolders: true},
			want{notes: map[string]string{"b.gif": ": not inline, t-adapter passes no image on to its model (adapter t-adapter)"}, layer: "(adapter t-adapter)"}},
		{"model takes no GIF", Options{Caps: Caps{Image: true}, Model: pngOnly, InlineFromFolders: true},
			want{inline: []string{"a/one.png", "c.dat"}, notes: map[string]string{"a/one.png": inlineNote, "b.gif": ": not inline, t-model takes no image/gif inline (model t-model)"}, layer: "(model t-model)"}},
		{"inline max", Options{Caps: Caps{Image: true}, InlineMax: 2500, InlineFromFolders: true},
			want{inline: []string{"b.gif", "c.dat"}, notes: map[string]string{"a/one.png": ": not inline, " + reasonOverMax(2500) + " (limits)"}, layer: "(limits)"}},
		{"inline budget, in prompt order", Options{Caps: Caps{Image: true}, InlineBudget: 3000 + int64(len(gf)), InlineFromFolders: true},
			want{inline: []string{"a/one.png", "b.gif"}, notes: map[string]string{"c.dat": ": not inline, " + reasonOverBudget(3000+int64(len(gf))) + " (limits)"}, layer: "(limits)"}},
	}
	data := map[string][]byte{"a/one.png": png3k, "b.gif": gf, "c.dat": png2k}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Resolve(in, rsLocal(s), c.opts)
			if err != nil {
				t.Fatal(err)
			}
			out := rsOutput(t, res)
			rsValidate(t, out)
			blocks := rsBlocks(t, out)
			folder := rec.Upload.Path
			// The text, the folder's link, the inline images, the context block.
			if len(blocks) != 3+len(c.want.inline) || blocks[1].Type != "resource_link" || blocks[1].MimeType != manifest.MimeFolder || blocks[1].URI != fileURI(folder) {
				t.Fatalf("blocks %+v, want the text, the folder's link, %d images and the context block", blocks, len(c.want.inline))
			}
			for k, rel := range c.want.inline {
				b := blocks[2+k]
				got, _ := base64.StdEncoding.DecodeString(b.Data)
				if b.Type != "image" || b.URI != fileURI(folder+"/"+rel) || !bytes.Equal(got, data[rel]) {
					t.Fatalf("block %d: %s %s (%d bytes), want %s inline", 2+k, b.Type, b.URI, len(got), rel)
				}
			}
			if res.Inline != len(c.want.inline) || res.ByPath != 1 {
				t.Fatalf("counted %d inline, %d by path", res.Inline, res.ByPath)
			}
			ctx := blocks[len(blocks)-1].Text
			for rel, note := range c.want.notes {
				size := len(data[rel])
				if rel == "notes.txt" {
					size = len("not an image\n")
				}
				line := "\n  - " + rel + " (" + strconv.Itoa(size) + " bytes)" + note + "\n"
				if !strings.Contains(ctx+"\n", line) {
					t.Fatalf("context block has no line %q:\n%s", line, ctx)
				}
			}
			explain := strings.Join(res.Explain(c.opts), "\n")
			for _, rel := range c.want.inline {
				if !strings.Contains(explain, "block 1: shots/"+rel+" in the folder (image/") {
					t.Fatalf("explain has no line for %s:\n%s", rel, explain)
				}
			}
			if !c.opts.InlineFromFolders && strings.Contains(explain, "in the folder") {
				t.Fatalf("explain names a file inside the folder though not asked:\n%s", explain)
			}
			if c.want.layer != "" && !strings.Contains(explain, "in the folder by path "+c.want.layer) {
				t.Fatalf("explain does not name %s:\n%s", c.want.layer, explain)
			}
		})
	}
}

// With a work folder the inline images name the files of the folder's copy, and with an adapter
// that drops a prompt's images beside a link (gemini-cli) the folder goes as a text block naming
// its path while its images go inline. An image inside the store changed since it was finished
// is refused while it is written (verify.mismatch), as any inline file is.
func TestResolveFolderImagesWorkdirChanged(t *testing.T) {
	s := testStore(t)
	png := rsPNG(t, 3000, 3)
	rec := rsFolder(t, s, "shots", map[string][]byte{"a.png": png, "b.txt": []byte("text\n")})
	in, err := Prompt([]*manifest.Record{rec}, PromptOptions{Session: "s", Text: "look", HasText: true})
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(t.TempDir(), "work")
	opts := Options{Caps: Caps{Image: true}, Adapter: FindAdapter("gemini-cli"), Workdir: work, InlineFromFolders: true}
	res, err := Resolve(in, rsLocal(s), opts)
	if err != nil {
		t.Fatal(err)
	}
	out := rsOutput(t, res)
	rsValidate(t, out)
	blocks := rsBlocks(t, out)
	copyDir := filepath.Join(work, rec.Upload.ID, "shots")
	if len(blocks) != 4 || blocks[1].Type != "text" || !strings.Contains(blocks[1].Text, copyDir+" (inode/directory") ||
		blocks[2].Type != "image" || blocks[2].URI != "file://"+copyDir+"/a.png" {
		t.Fatalf("blocks %+v, want the folder's copy named in text and a.png inline from it", blocks)
	}
	if got, err := os.ReadFile(filepath.Join(copyDir, "a.png")); err != nil || !bytes.Equal(got, png) {
		t.Fatalf("the copy of a.png: %v", err)
	}

	// The store's a.png changed in place (same size): refused by Resolve, which reads every
	// inline byte before it returns.
	inside := filepath.Join(rec.Upload.Path, "a.png")
	if err := os.Chmod(inside, 0o600); err != nil {
		t.Fatal(err)
	}
	bad := append([]byte{}, png...)
	bad[len(bad)-20] ^= 1
	if err := os.WriteFile(inside, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(inside, 0o400); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(in, rsLocal(s), Options{Caps: Caps{Image: true}, InlineFromFolders: true}); fault.CodeOf(err) != fault.VerifyMismatch || !strings.Contains(err.Error(), "prompt block 1:") || !strings.Contains(err.Error(), "shots/a.png no longer matches") {
		t.Fatalf("%v, want verify.mismatch at the folder's block", err)
	}
}
