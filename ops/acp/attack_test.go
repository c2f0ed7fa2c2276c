package acp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// rsMarkers is each upload's .used marker as a test sees it: "" when there is none, else its
// mtime.
func rsMarkers(t *testing.T, s *localStore, ids ...string) []string {
	t.Helper()
	var out []string
	for _, id := range ids {
		fi, err := os.Lstat(filepath.Join(s.UploadDir(id), store.UsedName))
		switch {
		case os.IsNotExist(err):
			out = append(out, "")
		case err != nil:
			t.Fatal(err)
		default:
			out = append(out, fi.ModTime().Format(time.RFC3339Nano))
		}
	}
	return out
}

// Keys are matched exactly: a key that equals a known ACP or acpmux key in another case is
// refused with upload.invalid naming the block and the key, wherever it is; nothing is written
// and no marker changes, neither a missing one nor one already there.
func TestResolveCaseVariantKeys(t *testing.T) {
	s := testStore(t)
	good := rsPut(t, s, "good.png", "image/png", rsPNG(t, 2048, 1))
	seen := rsPut(t, s, "seen.bin", "", rsBytes(100, 2))
	// seen was used before: its marker must keep its time.
	if _, err := Resolve(rsPrompt(t, []*manifest.Record{seen}, ""), rsLocal(s), Options{Now: time.Unix(1e9, 0)}); err != nil {
		t.Fatal(err)
	}
	before := rsMarkers(t, s, good.Upload.ID, seen.Upload.ID)
	if before[0] != "" || before[1] == "" {
		t.Fatalf("markers before: %q", before)
	}
	id, sid := good.Upload.ID, seen.Upload.ID
	ref := fmt.Sprintf(`{"type":"image","mimeType":"image/png","_meta":{"acpmux":{"upload":{"uploadId":%q,"fileName":"good.png"}}}}`, id)
	link := fmt.Sprintf(`{"type":"resource_link","uri":"acpmux-upload:%s","name":"seen.bin","_meta":{"acpmux":{"upload":{"uploadId":%[1]q,"fileName":"seen.bin"}}}}`, sid)
	params := func(blocks ...string) string {
		return `{"sessionId":"s","prompt":[` + ref + `,` + link + `,` + strings.Join(blocks, ",") + `]}`
	}
	cases := []struct {
		name, in, want string // want: what the error must say
	}{
		{"URI beside a reference", params(fmt.Sprintf(`{"type":"resource_link","uri":"acpmux-upload:%s","URI":"file:///etc/passwd","name":"good.png","_meta":{"acpmux":{"upload":{"uploadId":%[1]q,"fileName":"good.png"}}}}`, id)),
			`prompt block 2: key "URI" is "uri" in another case`},
		{"Type on a text block", params(`{"type":"text","text":"x","Type":"resource","resource":{"uri":"file:///etc/passwd","text":"root"}}`),
			`prompt block 2: key "Type" is "type" in another case`},
		{"_Meta", params(`{"type":"text","text":"x","_Meta":{"acpmux":{"context":true}}}`),
			`prompt block 2: key "_Meta" is "_meta" in another case`},
		{"MimeType", params(`{"type":"image","data":"AAAA","mimeType":"image/png","MimeType":"text/html"}`),
			`prompt block 2: key "MimeType" is "mimeType" in another case`},
		{"Data", params(`{"type":"image","data":"AAAA","mimeType":"image/png","Data":"BBBB"}`),
			`prompt block 2: key "Data" is "data" in another case`},
		{"Name", params(`{"type":"resource_link","uri":"https://x","name":"a","NAME":"b"}`),
			`prompt block 2: key "NAME" is "name" in another case`},
		{"Resource", params(`{"type":"text","text":"x","Resource":{"uri":"file:///etc/passwd","text":"root"}}`),
			`prompt block 2: key "Resource" is "resource" in another case`},
		{"Acpmux", params(fmt.Sprintf(`{"type":"image","mimeType":"image/png","_meta":{"Acpmux":{"upload":{"uploadId":%q,"fileName":"good.png"}}}}`, id)),
			`prompt block 2: key "Acpmux" in _meta is "acpmux" in another case`},
		{"Upload", params(fmt.Sprintf(`{"type":"image","mimeType":"image/png","_meta":{"acpmux":{"upload":{"uploadId":%q,"fileName":"good.png"},"Upload":{"uploadId":%[1]q,"fileName":"x.png"}}}}`, id)),
			`prompt block 2: key "Upload" in _meta.acpmux is "upload" in another case`},
		{"FileName", params(fmt.Sprintf(`{"type":"image","mimeType":"image/png","_meta":{"acpmux":{"upload":{"uploadId":%q,"fileName":"good.png","FileName":"../x"}}}}`, id)),
			`prompt block 2: key "FileName" in _meta.acpmux.upload is "fileName" in another case`},
		{"UploadID", params(fmt.Sprintf(`{"type":"image","mimeType":"image/png","_meta":{"acpmux":{"upload":{"uploadId":%q,"fileName":"good.png","uploadID":"x"}}}}`, id)),
			`prompt block 2: key "uploadID" in _meta.acpmux.upload is "uploadId" in another case`},
		{"Context", params(`{"type":"text","text":"x","_meta":{"acpmux":{"Context":true}}}`),
			`prompt block 2: key "Context" in _meta.acpmux is "context" in another case`},
		{"Audience", params(`{"type":"text","text":"x","annotations":{"Audience":["user"]}}`),
			`prompt block 2: key "Audience" in annotations is "audience" in another case`},
		{"SessionId", `{"sessionId":"s","SessionId":"t","prompt":[` + ref + `]}`,
			`the document: key "SessionId" is "sessionId" in another case`},
		{"Prompt", `{"sessionId":"s","prompt":[` + ref + `],"Prompt":[]}`,
			`the document: key "Prompt" is "prompt" in another case`},
		{"params _Meta", `{"sessionId":"s","_meta":{},"_META":{},"prompt":[` + ref + `]}`,
			`the document: key "_META" is "_meta" in another case`},
		{"Params", `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[` + ref + `]},"Params":{}}`,
			`the document: key "Params" is "params" in another case`},
		{"Method", `{"jsonrpc":"2.0","id":1,"method":"session/prompt","Method":"session/cancel","params":{"sessionId":"s","prompt":[` + ref + `]}}`,
			`the document: key "Method" is "method" in another case`},
		{"JsonRpc", `{"jsonrpc":"2.0","JSONRPC":"1.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[` + ref + `]}}`,
			`the document: key "JSONRPC" is "jsonrpc" in another case`},
		{"params in a request", `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","SESSIONID":"t","prompt":[` + ref + `]}}`,
			`params: key "SESSIONID" is "sessionId" in another case`},
		// Unicode simple folding, as Go's encoding/json matches keys: U+017F (long s) folds to s.
		{"ſessionId", `{"sessionId":"s","ſessionId":"t","prompt":[` + ref + `]}`,
			`the document: key "ſessionId" is "sessionId" in another case`},
		{"ſize", params(fmt.Sprintf(`{"type":"resource_link","uri":"acpmux-upload:%s","name":"seen.bin","ſize":1,"_meta":{"acpmux":{"upload":{"uploadId":%[1]q,"fileName":"seen.bin"}}}}`, sid)),
			`prompt block 2: key "ſize" is "size" in another case`},
		{"reſource", params(`{"type":"text","text":"x","reſource":{"uri":"file:///etc/passwd","text":"root"}}`),
			`prompt block 2: key "reſource" is "resource" in another case`},
		{"uploaD", params(fmt.Sprintf(`{"type":"image","mimeType":"image/png","_meta":{"acpmux":{"upload":{"uploadId":%q,"fileName":"good.png"},"uploaD":{}}}}`, id)),
			`key "uploaD" in _meta.acpmux is "upload" in another case`},
		{"a duplicate key in a block", params(`{"type":"text","text":"a","text":"b"}`),
			`prompt block 2: key "text" appears twice`},
		{"a duplicate key in _meta", params(fmt.Sprintf(`{"type":"image","mimeType":"image/png","_meta":{"acpmux":{"upload":{"uploadId":%q,"fileName":"good.png","fileName":"x.png"}}}}`, id)),
			`prompt block 2: key "fileName" appears twice in _meta.acpmux.upload`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Resolve([]byte(c.in), rsLocal(s), Options{Caps: Caps{Image: true}})
			if res != nil || fault.CodeOf(err) != fault.UploadInvalid {
				t.Fatalf("%v, want upload.invalid", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v\nwant it to say %s", err, c.want)
			}
			if after := rsMarkers(t, s, id, sid); after[0] != before[0] || after[1] != before[1] {
				t.Fatalf("markers changed: %q, then %q", before, after)
			}
		})
	}
	// A key twice at the top is not a prompt (exit 2), as before.
	_, err := Resolve([]byte(`{"sessionId":"s","sessionId":"t","prompt":[]}`), rsLocal(s), Options{})
	if fault.CodeOf(err) != fault.ManifestInvalid {
		t.Fatalf("%v, want manifest.invalid", err)
	}
}

// foldKey folds as encoding/json matches a key to a struct field: the cases the exact-key rule
// must refuse are exactly those encoding/json would take for the known key.
func TestFoldKeyIsEncodingJSONs(t *testing.T) {
	var v struct {
		Size      int    `json:"size"`
		Resource  string `json:"resource"`
		SessionID string `json:"sessionId"`
		Kind      string `json:"kind"`
	}
	for _, c := range []struct{ key, field string }{
		{"ſize", "size"}, {"SIZE", "size"}, {"reſource", "resource"}, {"ſessionId", "sessionId"},
		{"SESSIONİD", "sessionId"},                                // dotted capital I is not in i's folding orbit
		{"\u212aind", "kind"}, {"KIND", "kind"}, {"kınd", "kind"}, // nor is dotless i
	} {
		v.Size, v.Resource, v.SessionID, v.Kind = 0, "", "", ""
		val := `"x"`
		if c.field == "size" {
			val = "7"
		}
		if err := json.Unmarshal([]byte(`{"`+c.key+`":`+val+`}`), &v); err != nil {
			t.Fatal(err)
		}
		took := v.Size != 0 || v.Resource != "" || v.SessionID != "" || v.Kind != ""
		if folded := foldKey(c.key) == foldKey(c.field); folded != took {
			t.Errorf("%q: encoding/json takes it for %q: %v; foldKey says %v", c.key, c.field, took, folded)
		}
	}
}

// knownKeys covers every property ACP v1's schema gives the objects resolve reads: the prompt
// request, its content blocks, annotations, embedded resources and the initialize response.
func TestKnownKeysCoverTheSchema(t *testing.T) {
	b, err := os.ReadFile("../../testdata/acp/schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Defs map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	defs := []string{"PromptRequest", "TextContent", "ImageContent", "AudioContent", "ResourceLink",
		"EmbeddedResource", "TextResourceContents", "BlobResourceContents", "Annotations",
		"InitializeResponse", "AgentCapabilities", "PromptCapabilities", "Implementation"}
	for _, d := range defs {
		props := s.Defs[d].Properties
		if len(props) == 0 {
			t.Fatalf("the schema has no properties for %s", d)
		}
		for k := range props {
			if knownKeys[foldKey(k)] != k && !bytes.Contains([]byte("loadSession mcpCapabilities sessionCapabilities auth authMethods"), []byte(k)) {
				t.Errorf("%s.%s is not a known key", d, k)
			}
		}
	}
}
