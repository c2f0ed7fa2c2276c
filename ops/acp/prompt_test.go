package acp

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
)

func TestPrompt(t *testing.T) {
	s := testStore(t)
	png := rsPut(t, s, "shot.png", "image/png", rsPNG(t, 2048, 1))
	jpg := rsPut(t, s, "photo.jpg", "image/jpeg", []byte("\xff\xd8\xff\xe0 not really"))
	pdf := rsPut(t, s, "report.pdf", "application/pdf", []byte("%PDF-1.4\n"))
	svg := rsPut(t, s, "logo.svg", "image/svg+xml", []byte("<svg/>"))
	recs := []*manifest.Record{png, jpg, pdf, svg}
	out, err := Prompt(recs, PromptOptions{Session: "chat-1", Text: "What changed?", HasText: true})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"sessionId":"chat-1","prompt":[{"type":"text","text":"What changed?"},` +
		`{"type":"image","mimeType":"image/png","_meta":{"acpmux":{"upload":{"uploadId":"` + png.Upload.ID + `","fileName":"shot.png"}}}},` +
		`{"type":"image","mimeType":"image/jpeg","_meta":{"acpmux":{"upload":{"uploadId":"` + jpg.Upload.ID + `","fileName":"photo.jpg"}}}},` +
		`{"type":"resource_link","uri":"acpmux-upload:` + pdf.Upload.ID + `","name":"report.pdf","_meta":{"acpmux":{"upload":{"uploadId":"` + pdf.Upload.ID + `","fileName":"report.pdf"}}}},` +
		`{"type":"resource_link","uri":"acpmux-upload:` + svg.Upload.ID + `","name":"logo.svg","_meta":{"acpmux":{"upload":{"uploadId":"` + svg.Upload.ID + `","fileName":"logo.svg"}}}}]}` + "\n"
	if string(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	// What prompt writes, resolve takes.
	res, err := Resolve(out, rsLocal(s), Options{Caps: Caps{Image: true}})
	if err != nil {
		t.Fatal(err)
	}
	rsValidate(t, rsOutput(t, res))
}

func TestPromptJSONRPC(t *testing.T) {
	s := testStore(t)
	rec := rsPut(t, s, "a.bin", "", []byte{0, 1})
	for id, want := range map[string]string{"": `1`, "7": `7`, "abc": `"abc"`, "1.5": `"1.5"`} {
		o := PromptOptions{Session: "s", JSONRPC: true}
		if id != "" {
			o.ID = RequestID(id)
		}
		out, err := Prompt([]*manifest.Record{rec}, o)
		if err != nil {
			t.Fatal(err)
		}
		prefix := `{"jsonrpc":"2.0","id":` + want + `,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"resource_link"`
		if !strings.HasPrefix(string(out), prefix) {
			t.Fatalf("--id %q: %s", id, out)
		}
		var v map[string]json.RawMessage
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPromptRefuses(t *testing.T) {
	s := testStore(t)
	ok := rsPut(t, s, "a.bin", "", []byte{0})
	noUpload := &manifest.Record{Path: "/x/b.png", Name: "b.png", Mime: "image/png"}
	failed := &manifest.Record{Path: "/x/c.png", Name: "c.png"}
	failed.Fail("sniff", fault.Errorf(fault.FileMissing, "/x/c.png: no such file"), "")
	badID := rsPut(t, s, "d.bin", "", []byte{0})
	badID.Upload.ID = "not-an-id"
	out, err := Prompt([]*manifest.Record{ok, noUpload, failed, badID}, PromptOptions{Session: "s"})
	if out != nil {
		t.Fatalf("wrote %s", out)
	}
	var j interface{ Unwrap() []error }
	if !errors.As(err, &j) || len(j.Unwrap()) != 3 {
		t.Fatalf("want three refusals: %v", err)
	}
	codes := []fault.Code{fault.UploadMissing, fault.FileMissing, fault.UploadInvalid}
	for i, e := range j.Unwrap() {
		if fault.CodeOf(e) != codes[i] {
			t.Fatalf("refusal %d: %v, want %s", i, e, codes[i])
		}
	}
}

// A folder upload is one block whatever it holds: the prompt of a folder of 3,000 files, with the
// longest name a store takes, stays under 1 KB (issue 19), and names no file inside.
func TestPromptFolderSize(t *testing.T) {
	name := strings.Repeat("n", 255)
	rec := &manifest.Record{Path: "/src/" + name, Name: name, Mime: manifest.MimeFolder, Kind: manifest.KindFolder,
		Files: 3000, Blake3: strings.Repeat("a", 64),
		Upload: &manifest.Upload{ID: "01a231e0-bbf6-7231-bb81-a3b3521e80cc", Store: "/s", Path: "/s/01a231e0-bbf6-7231-bb81-a3b3521e80cc/" + name}}
	rec.SetSize(13 << 20)
	out, err := Prompt([]*manifest.Record{rec}, PromptOptions{Session: "chat-1", Text: "review", HasText: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) >= 1000 || strings.Count(string(out), `"type"`) != 2 || !strings.Contains(string(out), `"mimeType":"inode/directory"`) {
		t.Fatalf("%d bytes: %s", len(out), out)
	}
}
