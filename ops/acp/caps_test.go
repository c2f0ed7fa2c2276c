package acp

import (
	"strings"
	"testing"
)

func TestParseInitialize(t *testing.T) {
	const result = `{"protocolVersion":1,"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":false,"audio":true,"embeddedContext":true}},"authMethods":[]}`
	for _, c := range []struct {
		name, in string
		want     Caps
		err      string
	}{
		{"result", result, Caps{Audio: true, EmbeddedContext: true}, ""},
		{"response", `{"jsonrpc":"2.0","id":0,"result":` + result + `}`, Caps{Audio: true, EmbeddedContext: true}, ""},
		{"defaults", `{"protocolVersion":1}`, Caps{}, ""},
		{"agent capabilities alone", `{"loadSession":true,"promptCapabilities":{"image":false,"audio":true}}`, Caps{Audio: true}, ""},
		{"agent capabilities alone, not a boolean", `{"promptCapabilities":{"image":1}}`, Caps{}, ""},
		// Later schemas give a capability as an object: present means supported.
		{"v2 objects", `{"protocolVersion":2,"agentCapabilities":{"promptCapabilities":{"image":{},"audio":{"formats":["wav"]},"embeddedContext":{}}}}`, Caps{Image: true, Audio: true, EmbeddedContext: true}, ""},
		{"v2 mixed", `{"protocolVersion":2,"agentCapabilities":{"promptCapabilities":{"image":{},"audio":false,"embeddedContext":null}}}`, Caps{Image: true}, ""},
		{"v2 response", `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":2,"agentCapabilities":{"promptCapabilities":{"image":{}}}}}`, Caps{Image: true}, ""},
		{"v2 alone", `{"promptCapabilities":{"image":{},"embeddedContext":{}}}`, Caps{Image: true, EmbeddedContext: true}, ""},
		{"no prompt capabilities", `{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}`, Caps{}, ""},
		{"image only", `{"protocolVersion":1,"agentCapabilities":{"promptCapabilities":{"image":true}}}`, Caps{Image: true}, ""},
		{"not JSON", `promptCapabilities: image`, Caps{}, "not JSON"},
		{"an array", `[]`, Caps{}, "not a JSON object"},
		{"no version", `{"agentCapabilities":{"promptCapabilities":{"image":true}}}`, Caps{}, `no "protocolVersion"`},
		{"bad version", `{"protocolVersion":1.5}`, Caps{}, "is not a version"},
		{"a request", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`, Caps{}, "a JSON-RPC request"},
		{"an error", `{"jsonrpc":"2.0","id":0,"error":{"code":-32603,"message":"boom"}}`, Caps{}, "answered with an error"},
		{"no result", `{"jsonrpc":"2.0","id":0}`, Caps{}, `no "result"`},
		// The v1 schema marks the booleans x-deserialize-default-on-error: a value of another type is false.
		{"not a boolean", `{"protocolVersion":1,"agentCapabilities":{"promptCapabilities":{"image":"yes","audio":1,"embeddedContext":[true]}}}`, Caps{}, ""},
		{"a key in another case", `{"protocolVersion":1,"agentCapabilities":{"promptCapabilities":{"image":false,"Image":true}}}`, Caps{}, `key "Image"`},
		// Go's encoding/json would take these for the known keys: Unicode simple folding.
		{"a key twice", `{"protocolVersion":1,"agentCapabilities":{"promptCapabilities":{"image":false,"audio":false,"embeddedContext":false,"embeddedContext":true}}}`, Caps{}, "appears twice"},
		{"long s", `{"protocolVersion":1,"agentCapabilities":{"promptCapabilitieſ":{"image":true}}}`, Caps{}, `key "promptCapabilitieſ"`},
		{"capabilities not an object", `{"protocolVersion":1,"agentCapabilities":[]}`, Caps{}, "agentCapabilities: not a JSON object"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := ParseInitialize([]byte(c.in))
			got := a.Caps
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.HasPrefix(err.Error(), "not an ACP initialize response") {
					t.Fatalf("%v, want an error saying %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("%+v %v, want %+v", got, err, c.want)
			}
		})
	}
	for _, c := range []struct{ in, name, version string }{
		{`{"protocolVersion":1,"agentInfo":{"name":"@zed-industries/claude-agent-acp","title":"Claude Agent","version":"0.23.1"}}`, "@zed-industries/claude-agent-acp", "0.23.1"},
		{`{"protocolVersion":1,"agentInfo":{"name":"gemini-cli","version":"0.61.0"}}`, "gemini-cli", "0.61.0"},
		{`{"protocolVersion":1,"agentInfo":null}`, "", ""},
		{`{"protocolVersion":1,"agentInfo":{"name":7}}`, "", ""},
	} {
		a, err := ParseInitialize([]byte(c.in))
		if err != nil || a.Name != c.name || a.Version != c.version {
			t.Errorf("%s: %+v %v, want %s %s", c.in, a, err, c.name, c.version)
		}
	}
	agent := Caps{Audio: true, EmbeddedContext: true}
	if got := (Caps{Image: true, Audio: true}).And(agent); got != (Caps{Audio: true}) {
		t.Fatalf("intersection %+v", got)
	}
}
