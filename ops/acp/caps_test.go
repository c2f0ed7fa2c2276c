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
		{"agent capabilities alone, bad", `{"promptCapabilities":{"image":1}}`, Caps{}, "promptCapabilities.image is not true or false"},
		{"no prompt capabilities", `{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}`, Caps{}, ""},
		{"image only", `{"protocolVersion":1,"agentCapabilities":{"promptCapabilities":{"image":true}}}`, Caps{Image: true}, ""},
		{"not JSON", `promptCapabilities: image`, Caps{}, "not JSON"},
		{"an array", `[]`, Caps{}, "not a JSON object"},
		{"no version", `{"agentCapabilities":{"promptCapabilities":{"image":true}}}`, Caps{}, `no "protocolVersion"`},
		{"bad version", `{"protocolVersion":1.5}`, Caps{}, "is not a version"},
		{"a request", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`, Caps{}, "a JSON-RPC request"},
		{"an error", `{"jsonrpc":"2.0","id":0,"error":{"code":-32603,"message":"boom"}}`, Caps{}, "answered with an error"},
		{"no result", `{"jsonrpc":"2.0","id":0}`, Caps{}, `no "result"`},
		{"not a boolean", `{"protocolVersion":1,"agentCapabilities":{"promptCapabilities":{"image":"yes"}}}`, Caps{}, "promptCapabilities.image is not true or false"},
		{"a key in another case", `{"protocolVersion":1,"agentCapabilities":{"promptCapabilities":{"image":false,"Image":true}}}`, Caps{}, `key "Image"`},
		{"capabilities not an object", `{"protocolVersion":1,"agentCapabilities":[]}`, Caps{}, "agentCapabilities: not a JSON object"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseInitialize([]byte(c.in))
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
	agent := Caps{Audio: true, EmbeddedContext: true}
	if got := (Caps{Image: true, Audio: true}).And(agent); got != (Caps{Audio: true}) {
		t.Fatalf("intersection %+v", got)
	}
}
