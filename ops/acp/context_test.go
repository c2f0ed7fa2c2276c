package acp

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
)

// Resolving resolved output changes nothing, byte for byte, and the output validates: with inline
// images, links, the context block, embedded text and audio, params or a request.
func TestResolveTwiceIsANoOp(t *testing.T) {
	s := testStore(t)
	wav := rsWAV(2048)
	recs := []*manifest.Record{
		rsPut(t, s, "a.png", "image/png", rsPNG(t, 4096, 1)),
		rsPut(t, s, "big.png", "image/png", rsPNG(t, 50000, 2)),
		rsPut(t, s, "b.bin", "", rsBytes(300, 3)),
		rsPut(t, s, "notes.md", "text/plain", []byte("# Notes\n")),
		rsPut(t, s, "a.wav", "audio/wav", wav),
	}
	for _, opts := range []Options{
		{Caps: Caps{Image: true}, InlineMax: 10000},
		{Caps: Caps{Image: true, Audio: true, EmbeddedContext: true}},
		{},
	} {
		for _, rpc := range []bool{false, true} {
			in, err := Prompt(recs, PromptOptions{Session: "s", Text: "look", HasText: true, JSONRPC: rpc})
			if err != nil {
				t.Fatal(err)
			}
			res, err := Resolve(in, rsLocal(s), opts)
			if err != nil {
				t.Fatal(err)
			}
			once := rsOutput(t, res)
			rsValidate(t, once)
			res, err = Resolve(once, rsLocal(s), opts)
			if err != nil {
				t.Fatalf("resolved output refused: %v", err)
			}
			if twice := rsOutput(t, res); !bytes.Equal(once, twice) {
				t.Fatalf("%+v: the second resolve changed the output:\n%s\n%s", opts.Caps, once, twice)
			}
			if len(res.IDs) != 0 {
				t.Fatalf("resolved output names uploads: %v", res.IDs)
			}
		}
	}
}

// 38 files by path under a message with room for their links and about 2,000 bytes more: the
// context block lists what fits, with reasons, and ends "and N more".
func TestResolveContextBlockAndMore(t *testing.T) {
	s := testStore(t)
	recs := rsShots(t, s, 38, 2048, "shot-%02d.png")
	in := rsPrompt(t, recs, "")
	opts := Options{Caps: Caps{}}
	// The size of the links alone, and of the header and "and 38 more": the rest is room for lines.
	var links int64
	for _, r := range recs {
		links += int64(len(fmt.Sprintf(`{"type":"resource_link","uri":%q,"name":%q,"mimeType":"image/png","size":2048},`, fileURI(r.Upload.Path), r.Name)))
	}
	base := links + int64(len(`{"sessionId":"s","prompt":[]}`)+1) + int64(len(contextJSON(contextHead(true)+moreLine(38)))) + 1
	opts.MaxMessage = base + 2000
	res, err := Resolve(in, rsLocal(s), opts)
	if err != nil {
		t.Fatal(err)
	}
	doc := rsOutput(t, res)
	rsValidate(t, doc)
	if res.ByPath != 38 || res.ContextListed == 0 || res.ContextListed >= 38 || int64(len(doc)) > opts.MaxMessage {
		t.Fatalf("by path %d, listed %d, %d bytes of %d", res.ByPath, res.ContextListed, len(doc), opts.MaxMessage)
	}
	blocks := rsBlocks(t, doc)
	ctx := blocks[len(blocks)-1].Text
	if !strings.HasSuffix(ctx, fmt.Sprintf("\n- and %d more", 38-res.ContextListed)) {
		t.Fatalf("the context block does not end with and N more:\n%s", ctx)
	}
	// They share one reason, said once at the head of their group.
	if !strings.Contains(ctx, groupHead(38, reasonNoImageCap, layerProtocol)) || strings.Count(ctx, reasonNoImageCap) != 1 ||
		strings.Count(ctx, "\n- /") != res.ContextListed {
		t.Fatalf("the shared reason is not said once, or a listed file is missing:\n%s", ctx)
	}
	// With no room beyond the links and the least context block it is still there.
	opts.MaxMessage = base
	res, err = Resolve(in, rsLocal(s), opts)
	if err != nil {
		t.Fatal(err)
	}
	blocks = rsBlocks(t, rsOutput(t, res))
	if ctx := blocks[len(blocks)-1].Text; res.ContextListed != 0 || !strings.HasSuffix(ctx, "\n- and 38 more") {
		t.Fatalf("listed %d: %s", res.ContextListed, ctx)
	}
	// One byte less is too many.
	opts.MaxMessage = base - 1
	if _, err := Resolve(in, rsLocal(s), opts); fault.CodeOf(err) != fault.UploadTooMany {
		t.Fatalf("%v, want upload.tooMany", err)
	}
}

// A name with a newline, a tab or a line separator is written escaped: one path is one line; a
// backslash or a quote is a character of the name like any other.
func TestResolveContextEscapesNames(t *testing.T) {
	s := testStore(t)
	names := []string{"two\nlines.bin", `back\slash.bin`, "\"quoted.bin", "tab\there.bin", "sep\u2028arator.bin", "plain é.bin"}
	var recs []*manifest.Record
	for i, n := range names {
		recs = append(recs, rsPut(t, s, n, "", rsBytes(10, uint64(i))))
	}
	res, err := Resolve(rsPrompt(t, recs, ""), rsLocal(s), Options{})
	if err != nil {
		t.Fatal(err)
	}
	doc := rsOutput(t, res)
	rsValidate(t, doc)
	blocks := rsBlocks(t, doc)
	lines := strings.Split(blocks[len(blocks)-1].Text, "\n")
	if len(lines) != 1+len(names) {
		t.Fatalf("%d lines for %d files:\n%s", len(lines), len(names), blocks[len(blocks)-1].Text)
	}
	for i, n := range names {
		want := "- " + escapePath(recs[i].Upload.Path) + " ("
		if !strings.HasPrefix(lines[1+i], want) {
			t.Fatalf("line %q, want it to start %q", lines[1+i], want)
		}
		if quoted := lines[1+i][2] == '"'; quoted != strings.ContainsAny(n, "\n\t\u2028") {
			t.Fatalf("%q: quoted %v", n, quoted)
		}
	}
}

// A reason for every file that could have gone inline and did not, whatever its kind and cause.
func TestResolveReasonForEveryKind(t *testing.T) {
	s := testStore(t)
	wav := rsWAV(2048)
	bmp, err := os.ReadFile("../../testdata/samples/image.bmp")
	if err != nil {
		t.Fatal(err)
	}
	img := rsPut(t, s, "a.png", "image/png", rsPNG(t, 4096, 1))
	aud := rsPut(t, s, "a.wav", "audio/wav", wav)
	txt := rsPut(t, s, "notes.md", "text/plain", []byte("# Notes\n"))
	big := rsPut(t, s, "big.txt", "text/plain", bytes.Repeat([]byte("x"), 200))
	bm := rsPut(t, s, "a.bmp", "image/bmp", bmp)
	bin := rsPut(t, s, "b.bin", "", rsBytes(100, 1))
	in := rsPrompt(t, []*manifest.Record{img, aud, txt, big, bm, bin}, "")
	for _, c := range []struct {
		opts Options
		want map[*manifest.Record]string // the reason and its layer; "" for a file listed with no reason
	}{
		{Options{}, map[*manifest.Record]string{img: reasonNoImageCap + " (protocol)", aud: reasonNoAudioCap + " (protocol)", txt: reasonNoEmbedCap + " (protocol)",
			big: reasonNoEmbedCap + " (protocol)", bm: reasonNotInlineType("image/bmp") + " (format)", bin: ""}},
		{Options{Caps: Caps{Image: true, Audio: true, EmbeddedContext: true}, InlineMax: 1000, EmbedMax: 100},
			map[*manifest.Record]string{img: reasonOverMax(1000) + " (limits)", aud: reasonOverMax(1000) + " (limits)", big: reasonOverEmbed(100) + " (limits)",
				bm: reasonNotInlineType("image/bmp") + " (format)", bin: ""}},
		{Options{Caps: Caps{Image: true, Audio: true}, InlineBudget: 5000},
			map[*manifest.Record]string{aud: reasonOverBudget(5000) + " (limits)", txt: reasonNoEmbedCap + " (protocol)", big: reasonNoEmbedCap + " (protocol)",
				bm: reasonNotInlineType("image/bmp") + " (format)", bin: ""}},
	} {
		res, err := Resolve(in, rsLocal(s), c.opts)
		if err != nil {
			t.Fatal(err)
		}
		doc := rsOutput(t, res)
		rsValidate(t, doc)
		blocks := rsBlocks(t, doc)
		ctx := blocks[len(blocks)-1].Text
		if res.ByPath != len(c.want) || res.ContextListed != len(c.want)+res.Embedded+res.Inline+res.Audio { // every file is named
			t.Fatalf("%+v: %d by path, %d listed, want %d:\n%s", c.opts.Caps, res.ByPath, res.ContextListed, len(c.want), ctx)
		}
		for rec, reason := range c.want {
			line := fmt.Sprintf("- %s (", rec.Upload.Path)
			i := strings.Index(ctx, line)
			if i < 0 {
				t.Fatalf("%s not listed:\n%s", rec.Name, ctx)
			}
			got, _, _ := strings.Cut(ctx[i:], "\n")
			_, gotReason, _ := strings.Cut(got, ": by path, ")
			if gotReason != reason {
				t.Fatalf("%+v: %s: reason %q, want %q", c.opts.Caps, rec.Name, gotReason, reason)
			}
		}
	}
}

// A store without local files (object storage) resolves through the work folder only.
func TestResolveNoLocalPath(t *testing.T) {
	s := testStore(t)
	rec := rsPut(t, s, "b.bin", "", rsBytes(100, 1))
	u := noPath{rsLocal(s)}
	in := rsPrompt(t, []*manifest.Record{rec}, "")
	if _, err := Resolve(in, u, Options{}); fault.CodeOf(err) != fault.UploadUnreadable || !strings.Contains(err.Error(), "--workdir") {
		t.Fatalf("%v, want upload.unreadable asking for a work folder", err)
	}
	work := filepath.Join(t.TempDir(), "work")
	res, err := Resolve(in, u, Options{Workdir: work})
	if err != nil {
		t.Fatal(err)
	}
	blocks := rsBlocks(t, rsOutput(t, res))
	if got := rsFilePath(t, blocks[0].URI); got != filepath.Join(work, rec.Upload.ID, "b.bin") || res.Copied != 1 {
		t.Fatalf("link %s, copied %d", got, res.Copied)
	}
}

// noPath is a store that keeps no local files.
type noPath struct{ Uploads }

func (n noPath) Open(id, name string) (*Upload, error) {
	f, err := n.Uploads.Open(id, name)
	if f != nil {
		f.Path = ""
	}
	return f, err
}

// Names people's files really have are written exactly as they are, so that the path a model
// reads is the path it opens: macOS screenshot and recording names (U+202F before AM), NBSP,
// ideographic space, ZWNJ, emoji and combining accents are not quoted or escaped.
func TestResolveContextPlainNames(t *testing.T) {
	s := testStore(t)
	names := []string{
		"Screen Shot 2026-11-30 at 10.00.00\u202fAM.bin",
		"Screen Recording 2026-11-30 at 9.41.07\u202fPM.mov.bin",
		"no\u00a0break.bin", "ideographic\u3000space.bin", "zw\u200cnj.bin", "party 🎉.bin",
		"cafe\u0301 combining.bin", "中文 文件.bin", "back\\slash.bin", "\"quoted\".bin",
	}
	var recs []*manifest.Record
	for i, n := range names {
		recs = append(recs, rsPut(t, s, n, "", rsBytes(10, uint64(i))))
	}
	res, err := Resolve(rsPrompt(t, recs, ""), rsLocal(s), Options{})
	if err != nil {
		t.Fatal(err)
	}
	blocks := rsBlocks(t, rsOutput(t, res))
	ctx := blocks[len(blocks)-1].Text
	for _, rec := range recs {
		if !strings.Contains(ctx, "\n- "+rec.Upload.Path+" (") {
			t.Errorf("the context block does not name %q as it is:\n%s", rec.Upload.Path, ctx)
		}
	}
}
